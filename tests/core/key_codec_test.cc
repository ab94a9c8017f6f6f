// Namespace and key-part rules, Hash12.
#include "clickatron/key_codec.h"

#include <gtest/gtest.h>

namespace clickatron {
namespace {

TEST(Namespace, Valid) {
  for (const char* ns : {"u", "c", "r", "ABCdef09", "a_b-c", "-", "_", "12345678", "L"}) {
    EXPECT_TRUE(ValidateNamespace(ns, "ns").ok()) << ns;
  }
}

TEST(Namespace, Invalid) {
  for (std::string_view ns : {"", "123456789", "a.b", "a|b", "a b", "a:b", "a,b", "é", "a\n",
                              "a/b"}) {
    Status st = ValidateNamespace(ns, "sns");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << ns;
    EXPECT_EQ(st.message().rfind("sns", 0), 0u) << "error must name the field: " << st.message();
  }
  Status reserved = ValidateNamespace("l", "ns");
  EXPECT_FALSE(reserved.ok());
  EXPECT_NE(reserved.message().find("reserved"), std::string::npos) << reserved.message();
}

TEST(KeyPart, ValidUtf8) {
  for (std::string_view v : {"jehiah", "US", "http://www.facebook.com/", "a b", "\xc3\xa9" /* é */,
                             "\xe6\x97\xa5\xe6\x9c\xac" /* 日本 */, "\xf0\x9f\x98\x80" /* 😀 */,
                             "\xef\xbf\xbf" /* U+FFFF */, "\xf4\x8f\xbf\xbf" /* U+10FFFF */,
                             "\xed\x9f\xbf" /* U+D7FF */, "tab\there", "x"}) {
    EXPECT_TRUE(ValidateKeyPart(v, "key").ok()) << QuoteForMessage(v);
  }
  // A NUL byte is valid UTF-8 (and gets hashed).
  EXPECT_TRUE(ValidateKeyPart(std::string_view("a\0b", 3), "key").ok());
}

TEST(KeyPart, InvalidUtf8) {
  for (std::string_view v : {
           "\xc0\xaf",               // overlong '/'
           "\xc1\xbf",               // overlong
           "\xe0\x80\xaf",           // overlong 3-byte
           "\xe0\x9f\xbf",           // overlong 3-byte (U+07FF)
           "\xf0\x80\x80\xaf",       // overlong 4-byte
           "\xf0\x8f\xbf\xbf",       // overlong 4-byte (U+FFFF)
           "\xed\xa0\x80",           // surrogate U+D800
           "\xed\xbf\xbf",           // surrogate U+DFFF
           "\xf4\x90\x80\x80",       // U+110000
           "\xf5\x80\x80\x80",       // lead byte beyond range
           "\xff", "\xfe", "\x80",   // never valid / lone continuation
           "abc\xe2\x82",            // truncated at the end
           "\xe2\x28\xa1",           // bad continuation
           "\xc3",                   // truncated 2-byte
       }) {
    Status st = ValidateKeyPart(v, "skey");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << QuoteForMessage(v);
    EXPECT_NE(st.message().find("UTF-8"), std::string::npos) << st.message();
  }
}

TEST(KeyPart, LengthAndEmptiness) {
  EXPECT_FALSE(ValidateKeyPart("", "key").ok());
  EXPECT_TRUE(ValidateKeyPart(std::string(kMaxKeyPartLength, 'a'), "key").ok());
  Status st = ValidateKeyPart(std::string(kMaxKeyPartLength + 1, 'a'), "key");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("4097"), std::string::npos) << st.message();
}

TEST(KeyPart, LineBreaksAreRefused) {
  // A lookup record keeps the value on one line; a line break cannot be stored.
  EXPECT_FALSE(ValidateKeyPart("a\nb", "key").ok());
  EXPECT_FALSE(ValidateKeyPart("a\rb", "key").ok());
  EXPECT_FALSE(ValidateKeyPart("\n", "key").ok());
}

TEST(NeedsHash, ReservedCharactersAndLength) {
  EXPECT_FALSE(NeedsHash("jehiah"));
  EXPECT_FALSE(NeedsHash("US"));
  EXPECT_FALSE(NeedsHash("12345678901"));   // 11 bytes
  EXPECT_TRUE(NeedsHash("123456789012"));   // 12 bytes
  EXPECT_TRUE(NeedsHash("h0aMB8AuNw4="));   // a hash is 12 bytes too
  for (std::string_view v : {"a b", "a:b", "a,b", "a.b", "a|b", "a\nb", "a\tb", "\x01", "\x1f"}) {
    EXPECT_TRUE(NeedsHash(v)) << QuoteForMessage(v);
  }
  EXPECT_TRUE(NeedsHash(std::string_view("\0", 1)));
  // Other punctuation and UTF-8 are fine as they are.
  for (std::string_view v : {"a-b", "a_b", "a/b", "a=b", "a+b", "a!b", "\x7f", "\xc3\xa9t\xc3\xa9"}) {
    EXPECT_FALSE(NeedsHash(v)) << QuoteForMessage(v);
  }
  // Length is in bytes: 6 two-byte characters are 12 bytes.
  EXPECT_TRUE(NeedsHash("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"));
}

TEST(Hash12, KnownAnswers) {
  // From the seed (bitly's own example).
  EXPECT_EQ(Hash12("http://www.facebook.com/"), "h0aMB8AuNw4=");
  // Computed with python3 when this test was written:
  //   base64.b64encode(hashlib.md5(v).digest()[:8]).decode()
  EXPECT_EQ(Hash12(""), "1B2M2Y8AsgQ=");
  EXPECT_EQ(Hash12("jehiah"), "yyN0Mp+Oc6c=");
  EXPECT_EQ(Hash12("https://bitly.com/"), "RYx5tkBXl0A=");
  EXPECT_EQ(Hash12("a b"), "DMnNTdJsUTc=");
  EXPECT_EQ(Hash12("hello world"), "XrY7u+Ae7tA=");
  // "日本語のキー" as UTF-8 bytes.
  EXPECT_EQ(Hash12("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x82\xad\xe3\x83\xbc"),
            "HANZqTdij/0=");
}

TEST(Hash12, AlwaysTwelveCharactersOfHashShape) {
  for (int i = 0; i < 2000; ++i) {
    const std::string h = Hash12(std::to_string(i));
    ASSERT_EQ(h.size(), kHashLength);
    ASSERT_TRUE(LooksLikeHash(h)) << h;
    // ...so every hash is accepted back as a stored key part.
    ASSERT_TRUE(ValidateStoredKeyPart(h, "tkey").ok()) << h;
  }
}

TEST(StoreKeyPart, HashesOnlyWhenNeeded) {
  StoredKeyPart plain = StoreKeyPart("jehiah");
  EXPECT_EQ(plain.stored, "jehiah");
  EXPECT_FALSE(plain.hashed);
  StoredKeyPart url = StoreKeyPart("http://www.facebook.com/");
  EXPECT_EQ(url.stored, "h0aMB8AuNw4=");
  EXPECT_TRUE(url.hashed);
  StoredKeyPart spaced = StoreKeyPart("a b");
  EXPECT_EQ(spaced.stored, "DMnNTdJsUTc=");
  EXPECT_TRUE(spaced.hashed);
}

TEST(LooksLikeHash, Shape) {
  EXPECT_TRUE(LooksLikeHash("h0aMB8AuNw4="));
  EXPECT_TRUE(LooksLikeHash("5bmehgOB4+w="));
  EXPECT_TRUE(LooksLikeHash("HANZqTdij/0="));
  EXPECT_FALSE(LooksLikeHash("h0aMB8AuNw4"));    // 11
  EXPECT_FALSE(LooksLikeHash("h0aMB8AuNw4=="));  // 13
  EXPECT_FALSE(LooksLikeHash("h0aMB8AuNw4x"));   // no '='
  EXPECT_FALSE(LooksLikeHash("h0aMB8AuN.4="));   // '.' is not base64
  EXPECT_FALSE(LooksLikeHash("h0aMB8Au=w4="));   // '=' only at the end
  EXPECT_FALSE(LooksLikeHash("h0aMB8AuNw-="));   // url-safe alphabet is not ours
}

TEST(StoredKeyPart, Validation) {
  EXPECT_TRUE(ValidateStoredKeyPart("jehiah", "tkey").ok());
  EXPECT_TRUE(ValidateStoredKeyPart("h0aMB8AuNw4=", "tkey").ok());
  EXPECT_TRUE(ValidateStoredKeyPart("12345678901", "tkey").ok());
  EXPECT_TRUE(ValidateStoredKeyPart("\xc3\xa9", "tkey").ok());
  for (std::string_view bad : {"", "123456789012", "h0aMB8AuNw4==", "a b", "a:b", "a,b", "a.b",
                               "a|b", "a\nb", "\xc0\xaf"}) {
    Status st = ValidateStoredKeyPart(bad, "skey");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << QuoteForMessage(bad);
    EXPECT_EQ(st.message().rfind("skey", 0), 0u) << st.message();
  }
}

TEST(QuoteForMessage, EscapesAndTruncates) {
  EXPECT_EQ(QuoteForMessage("jehiah"), "\"jehiah\"");
  EXPECT_EQ(QuoteForMessage("a\nb\"c\\"), "\"a\\nb\\\"c\\\\\"");
  EXPECT_EQ(QuoteForMessage(std::string_view("\0\x7f", 2)), "\"\\x00\\x7f\"");
  EXPECT_EQ(QuoteForMessage("\xc3\xa9\xff"), "\"\xc3\xa9\\xff\"");
  const std::string quoted = QuoteForMessage(std::string(1000, 'x'));
  EXPECT_LT(quoted.size(), 120u);
  EXPECT_NE(quoted.find("1000 bytes"), std::string::npos) << quoted;
}

}  // namespace
}  // namespace clickatron
