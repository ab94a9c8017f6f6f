// FetchToFile against a stand-in server (the core HTTP server in this
// process): a 200 answer lands whole; an error answer, a hook's refusal or
// a dead peer leave the old file as it was and no temporary file behind; an
// error answer is reported by its own message even when a hook refused its
// bytes.
#include "clickatron/fetch_to_file.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "clickatron/http_server.h"
#include "testutil/stand_in_server.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

using clickatron::testing::TempDir;

class FileServer {
 public:
  FileServer() {
    stand_in_.server().Route("/file", [](const HttpExchangePtr& ex) {
      const std::string* name = ex->args().Get("name");
      if (name != nullptr && *name == "good") {
        ex->StartStream(200, "text/plain");
        ex->SendChunk(Body().substr(0, 5000));
        ex->SendChunk(Body().substr(5000));
        ex->EndStream();
      } else {
        ex->ReplyError(404, "NO_SUCH_FILE", "there is no such file here");
      }
    }, kGet);
    stand_in_.Start();
  }
  HostPort peer() const { return stand_in_.peer(); }
  static std::string Body() {
    std::string body;
    for (int i = 0; i < 2000; ++i) body += "line " + std::to_string(i) + "\n";
    return body;
  }

 private:
  clickatron::testing::StandInServer stand_in_{"fake"};
};

HttpRequestSpec Get(const std::string& name) {
  HttpRequestSpec request;
  request.target = "/file?name=" + name;
  request.timeout_ms = 5000;
  return request;
}

TEST(FetchToFile, AWholeAnswerLandsAndTheHooksSeeEveryByte) {
  FileServer server;
  TempDir tmp;
  BlockingHttpClient client;
  uint64_t seen = 0;
  bool offsets_in_order = true;
  FetchToFileOptions options;
  options.on_chunk = [&](std::string_view chunk, uint64_t offset) {
    offsets_in_order = offsets_in_order && offset == seen;
    seen += chunk.size();
    return Status::Ok();
  };
  uint64_t checked = 0;
  options.check = [&](const HttpResponse& r, const std::string& temp, uint64_t bytes) {
    EXPECT_EQ(r.status_code, 200);
    EXPECT_EQ(temp, tmp / "f.csv.part");
    EXPECT_EQ(*ReadFileToString(temp), FileServer::Body());  // on disk before the rename
    checked = bytes;
    return Status::Ok();
  };
  Result<uint64_t> got = FetchToFile(client, server.peer(), Get("good"), tmp / "f.csv", "the test file", options);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, FileServer::Body().size());
  EXPECT_EQ(seen, FileServer::Body().size());
  EXPECT_TRUE(offsets_in_order);
  EXPECT_EQ(checked, FileServer::Body().size());
  EXPECT_EQ(*ReadFileToString(tmp / "f.csv"), FileServer::Body());
  EXPECT_FALSE(FileExists(tmp / "f.csv.part"));
}

// Every failure keeps the old file and leaves no temporary file.
TEST(FetchToFile, FailuresKeepTheOldFileAndSayWhy) {
  FileServer server;
  TempDir tmp;
  BlockingHttpClient client;
  const std::string path = tmp / "f.csv";
  ASSERT_TRUE(WriteFileAtomically(path, "old\n").ok());
  const auto expect_kept = [&](const std::string& what) {
    EXPECT_EQ(*ReadFileToString(path), "old\n") << what;
    EXPECT_FALSE(FileExists(path + ".tmp")) << what;
  };
  FetchToFileOptions options;
  options.temp_suffix = ".tmp";

  // An error answer, with a hook that refuses any byte (as an empty file's
  // length check does): the answer's own reason is what is reported.
  options.on_chunk = [](std::string_view, uint64_t) { return Status::Corruption("more than the 0 bytes expected"); };
  Result<uint64_t> r = FetchToFile(client, server.peer(), Get("missing"), path, "the test file", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("HTTP 404"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("there is no such file here"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("the test file"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(r.status().reason(), "NO_SUCH_FILE") << "callers act on the answer's reason, not its text";
  expect_kept("error answer");

  // A hook refusing a 200 answer's bytes: its own status.
  options.on_chunk = [](std::string_view, uint64_t offset) {
    return offset > 0 ? Status::Corruption("the source sent more than it should") : Status::Ok();
  };
  r = FetchToFile(client, server.peer(), Get("good"), path, "the test file", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  expect_kept("chunk refused");

  // The whole-file check refusing.
  options.on_chunk = nullptr;
  options.check = [](const HttpResponse&, const std::string&, uint64_t) { return Status::Corruption("bad crc"); };
  r = FetchToFile(client, server.peer(), Get("good"), path, "the test file", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  expect_kept("check refused");

  // Nobody listening (port 1: nothing serves it on a test machine).
  options.check = nullptr;
  r = FetchToFile(client, clickatron::testing::NeverStartedAddress(), Get("good"), path, "the test file", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  expect_kept("dead peer");
}

// A source that dies mid-answer (the nightly run's publisher killed while a
// replica fetches from it): the fetch fails at once, not at its deadline,
// for a chunked answer and for one with a Content-Length. A raw server: it
// writes the head and part of the body, then closes.
TEST(FetchToFile, ASourceThatDiesMidAnswerFailsTheFetchAtOnce) {
  for (const bool chunked : {true, false}) {
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(listener, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listener, 1), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
    std::thread source([listener, chunked] {
      const int fd = ::accept(listener, nullptr, nullptr);
      if (fd < 0) return;
      char request[4096];
      (void)::recv(fd, request, sizeof request, 0);
      const std::string part(8 << 20, 'x');
      std::string answer = chunked ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   : "HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n";
      // Cut inside a chunk, as a source dies mid-write: the chunk's head
      // declares more than is sent.
      answer += chunked ? fmt::format("{:x}\r\n{}", 2 * part.size(), part) : part;
      for (size_t sent = 0; sent < answer.size();) {
        const ssize_t n = ::send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(fd);  // dies here
    });
    TempDir tmp;
    BlockingHttpClient client;
    HttpRequestSpec request = Get("good");
    request.timeout_ms = 30000;
    const auto start = std::chrono::steady_clock::now();
    // A slow sink (a disk): the source's end arrives while bytes it sent
    // still wait in the client's buffer.
    FetchToFileOptions options;
    options.on_chunk = [](std::string_view, uint64_t offset) {
      if (offset % (1 << 20) < (64 << 10)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return Status::Ok();
    };
    Result<uint64_t> r = FetchToFile(client, HostPort{"127.0.0.1", ntohs(a.sin_port)}, request, tmp / "f.csv",
                                     "the test file", options);
    const auto took = std::chrono::steady_clock::now() - start;
    source.join();
    ::close(listener);
    ASSERT_FALSE(r.ok()) << (chunked ? "chunked" : "content-length");
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
    // Not the deadline's doing: 30 s, where the death is seen at once.
    EXPECT_LT(took, std::chrono::seconds(20)) << (chunked ? "chunked" : "content-length");
    EXPECT_FALSE(FileExists(tmp / "f.csv"));
  }
}

}  // namespace
}  // namespace clickatron
