// rpc::TlsMaterial on files in a temp dir: what it takes, what it refuses and what it reports.
// Refresh() is called directly (the watcher's own interval is an hour) except in the one test of
// the watcher's thread.
#include "proto/rpc/tls_material.h"

#include <mutex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/pki/tls_test_files.h"

namespace handoff::rpc {
namespace {

using ::handoff::testing::Issue;
using ::handoff::testing::NewCa;
using ::handoff::testing::Serial;
using ::handoff::testing::TlsFilesDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class TlsMaterialTest : public ::testing::Test {
 protected:
  TlsMaterialTest()
      : ca_(NewCa()), a_(Issue(ca_, "handoff-coordinator", true)),
        b_(Issue(ca_, "handoff-coordinator", true)) {
    dir_.WriteCa(ca_.certificate_pem);
    dir_.WriteIdentity(a_);
  }

  // Watches dir_ with an interval that never passes in a test; reports land in reloaded_ and
  // refused_.
  std::shared_ptr<TlsMaterial> Watch(std::function<absl::Status(const TlsPems&)> check = nullptr) {
    TlsWatchOptions options;
    options.refresh_interval = absl::Hours(1);
    options.check = std::move(check);
    options.on_reloaded = [this](const TlsPems& now) {
      std::lock_guard<std::mutex> lock(mutex_);
      reloaded_.push_back(Serial(now.cert_pem));
    };
    options.on_refused = [this](const absl::Status& why) {
      std::lock_guard<std::mutex> lock(mutex_);
      refused_.push_back(std::string(why.message()));
    };
    absl::StatusOr<std::shared_ptr<TlsMaterial>> material =
        TlsMaterial::Watch(dir_.files(), std::move(options));
    EXPECT_TRUE(material.ok()) << material.status();
    return material.ok() ? *material : nullptr;
  }

  std::vector<std::string> Reloaded() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reloaded_;
  }
  std::vector<std::string> Refused() {
    std::lock_guard<std::mutex> lock(mutex_);
    return refused_;
  }

  TlsFilesDir dir_;
  pki::KeyPair ca_;
  pki::KeyPair a_;
  pki::KeyPair b_;
  std::mutex mutex_;
  std::vector<std::string> reloaded_;
  std::vector<std::string> refused_;
};

TEST_F(TlsMaterialTest, ServesTheFilesAndTakesAWholeReplacement) {
  std::shared_ptr<TlsMaterial> material = Watch();
  ASSERT_NE(material, nullptr);
  EXPECT_EQ(material->Current(),
            (TlsPems{ca_.certificate_pem, a_.certificate_pem, a_.private_key_pem}));
  EXPECT_NE(material->provider(), nullptr);
  EXPECT_TRUE(material->Refresh().ok());
  EXPECT_THAT(Reloaded(), IsEmpty());  // nothing changed

  dir_.WriteIdentity(b_);
  EXPECT_TRUE(material->Refresh().ok());
  EXPECT_EQ(material->Current(),
            (TlsPems{ca_.certificate_pem, b_.certificate_pem, b_.private_key_pem}));
  EXPECT_TRUE(material->Refresh().ok());
  EXPECT_THAT(Reloaded(), ElementsAre(Serial(b_.certificate_pem)));
  EXPECT_THAT(Refused(), IsEmpty());
}

TEST_F(TlsMaterialTest, KeyOfAnotherCertificateIsRefusedOnceAndThePreviousPairKept) {
  std::shared_ptr<TlsMaterial> material = Watch();
  ASSERT_NE(material, nullptr);
  dir_.WriteCertificate(b_);  // the key is still a_'s: a rotation half done
  absl::Status refused = material->Refresh();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr(dir_.Path("tls.key")), HasSubstr(dir_.Path("tls.crt")),
                    HasSubstr("does not belong to the certificate"),
                    HasSubstr("keep the previous certificate"),
                    HasSubstr(Serial(a_.certificate_pem))));
  EXPECT_EQ(material->Current().cert_pem, a_.certificate_pem);
  // Said once, not at every refresh; still the answer to the next.
  EXPECT_EQ(material->Refresh(), refused);
  EXPECT_THAT(Refused(), ElementsAre(std::string(refused.message())));

  dir_.WriteKey(b_);  // the rotation completed
  EXPECT_TRUE(material->Refresh().ok());
  EXPECT_EQ(material->Current().key_pem, b_.private_key_pem);
  EXPECT_THAT(Reloaded(), ElementsAre(Serial(b_.certificate_pem)));
}

TEST_F(TlsMaterialTest, UnparsableOrMissingReplacementIsRefusedNamingTheFile) {
  std::shared_ptr<TlsMaterial> material = Watch();
  ASSERT_NE(material, nullptr);
  dir_.WriteCa("not a certificate");
  EXPECT_THAT(std::string(material->Refresh().message()), HasSubstr(dir_.Path("ca.crt")));
  std::filesystem::remove(dir_.Path("tls.key"));
  EXPECT_THAT(std::string(material->Refresh().message()), HasSubstr(dir_.Path("tls.key")));
  EXPECT_EQ(material->Current().ca_pem, ca_.certificate_pem);
  EXPECT_THAT(Refused(), SizeIs(2));
  EXPECT_THAT(Reloaded(), IsEmpty());
}

TEST_F(TlsMaterialTest, CallersCheckRefusesAReplacementAndTheStart) {
  const std::string refused_serial = Serial(b_.certificate_pem);
  auto not_b = [refused_serial](const TlsPems& read) {
    return Serial(read.cert_pem) == refused_serial
               ? absl::InvalidArgumentError("tls.crt: not this one")
               : absl::OkStatus();
  };
  std::shared_ptr<TlsMaterial> material = Watch(not_b);
  ASSERT_NE(material, nullptr);
  dir_.WriteIdentity(b_);
  EXPECT_THAT(std::string(material->Refresh().message()), HasSubstr("tls.crt: not this one"));
  EXPECT_EQ(material->Current().cert_pem, a_.certificate_pem);

  TlsWatchOptions options;
  options.check = not_b;
  EXPECT_EQ(TlsMaterial::Watch(dir_.files(), options).status(),
            absl::InvalidArgumentError("tls.crt: not this one"));
}

TEST_F(TlsMaterialTest, StartRefusesAMismatchedPairOrAMissingFile) {
  dir_.WriteKey(b_);
  absl::StatusOr<std::shared_ptr<TlsMaterial>> mismatched =
      TlsMaterial::Watch(dir_.files(), TlsWatchOptions());
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mismatched.status().message()),
              HasSubstr("does not belong to the certificate"));

  TlsFiles missing = dir_.files();
  missing.ca_file = dir_.Path("absent.crt");
  absl::StatusOr<std::shared_ptr<TlsMaterial>> unread =
      TlsMaterial::Watch(missing, TlsWatchOptions());
  EXPECT_EQ(unread.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unread.status().message()), HasSubstr(dir_.Path("absent.crt")));

  TlsWatchOptions never;
  never.refresh_interval = absl::ZeroDuration();
  EXPECT_EQ(TlsMaterial::Watch(dir_.files(), never).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TlsMaterialTest, FixedRefusesAKeyOfAnotherCertificate) {
  absl::StatusOr<std::shared_ptr<TlsMaterial>> fixed =
      TlsMaterial::Fixed({ca_.certificate_pem, a_.certificate_pem, b_.private_key_pem});
  EXPECT_EQ(fixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(fixed.status().message()),
              HasSubstr("the key with the certificate: the private key does not belong"));
  fixed = TlsMaterial::Fixed({ca_.certificate_pem, a_.certificate_pem, a_.private_key_pem});
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_TRUE((*fixed)->Refresh().ok());
  EXPECT_EQ((*fixed)->Current().cert_pem, a_.certificate_pem);
}

TEST_F(TlsMaterialTest, WatcherThreadTakesAReplacementByItself) {
  TlsWatchOptions options;
  options.refresh_interval = absl::Milliseconds(100);
  absl::StatusOr<std::shared_ptr<TlsMaterial>> material =
      TlsMaterial::Watch(dir_.files(), std::move(options));
  ASSERT_TRUE(material.ok()) << material.status();
  dir_.WriteIdentity(b_);
  EXPECT_TRUE(testing::Eventually(
      [&] { return (*material)->Current().cert_pem == b_.certificate_pem; }));
}

}  // namespace
}  // namespace handoff::rpc
