#include "support/sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace tegula {
namespace {

// Test vectors from FIPS 180-4's examples and NIST's SHAVS short/long messages.
TEST(Sha256, EmptyString) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessage448Bits) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, Message896Bits) {
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                       "klmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionA) {
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, OneMillionAInUnevenPieces) {
  Sha256 hasher;
  std::string piece(7, 'a');
  size_t fed = 0;
  while (fed + piece.size() <= 1000000) {
    hasher.update(piece);
    fed += piece.size();
  }
  hasher.update(std::string(1000000 - fed, 'a'));
  EXPECT_EQ(hasher.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding boundaries (55, 56, 63, 64, 65 bytes) hashed in
// one call and byte by byte must agree.
TEST(Sha256, SplitUpdatesMatchOneShot) {
  std::mt19937 rng(42);
  for (size_t length : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000}) {
    std::string data(length, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    Sha256 bytewise;
    for (char c : data) bytewise.update(&c, 1);
    EXPECT_EQ(bytewise.finish_hex(), sha256_hex(data)) << "length " << length;
  }
}

TEST(Sha256, ResetStartsOver) {
  Sha256 hasher;
  hasher.update("something else");
  hasher.finish();
  hasher.reset();
  hasher.update("abc");
  EXPECT_EQ(hasher.finish_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace tegula
