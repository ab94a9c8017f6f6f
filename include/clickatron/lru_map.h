// String key -> value, least recently used out first, within a budget of
// "charges" (what each entry is charged is the owner's choice: 1 per entry
// for a count, or its bytes). The one LRU of the read path's caches that are
// a plain map (the API's lookup cache and decoded realtime sketches, a
// realtime shard's scan cache); the API's archive
// answer cache keeps its own, keyed per shard and file generation.
//
// Thread-safety: none; one instance belongs to a loop thread.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "clickatron/text_hash.h"

namespace clickatron {

template <typename Value>
class LruMap {
 public:
  explicit LruMap(size_t budget) : budget_(budget) {}

  // The value kept for `key`, now the most recently used; nullptr when
  // absent. Valid until the next Put.
  Value* Find(std::string_view key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }

  // Keeps (or replaces) `value` for `key`, charged `charge`, dropping the
  // least recently used until the total fits the budget. An entry charged
  // more than the whole budget is not kept.
  void Put(std::string_view key, Value value, size_t charge) {
    if (auto it = index_.find(key); it != index_.end()) Drop(it->second);
    if (charge > budget_) return;
    while (charged_ + charge > budget_ && !order_.empty()) Drop(std::prev(order_.end()));
    order_.push_front(Entry{std::string(key), std::move(value), charge});
    index_.emplace(order_.front().key, order_.begin());
    charged_ += charge;
  }

  // Drops the entry of `key`, if any.
  void Erase(std::string_view key) {
    if (auto it = index_.find(key); it != index_.end()) Drop(it->second);
  }

  size_t size() const { return order_.size(); }
  size_t charged() const { return charged_; }  // the sum of the kept entries' charges

 private:
  struct Entry {
    std::string key;
    Value value;
    size_t charge = 0;
  };
  using Order = std::list<Entry>;

  void Drop(typename Order::iterator entry) {
    charged_ -= entry->charge;
    index_.erase(std::string_view(entry->key));
    order_.erase(entry);
  }

  size_t budget_;
  size_t charged_ = 0;
  Order order_;  // most recently used first
  std::unordered_map<std::string_view, typename Order::iterator, TextHash, std::equal_to<>> index_;  // views into order_
};

}  // namespace clickatron
