// TLS between cluster members (optional): OpenSSL wrapped once, here.
//
// With [cluster] tls_cert_file, tls_key_file and tls_ca_file set, every
// member's HTTP server speaks only TLS (1.2 or later), and every member,
// tool and the rebuild connect with TLS, verifying the peer's certificate
// against the cluster's CA and its name or IP address against the member's
// listen host. Servers ask for no client certificate: between members the
// cluster signature is the proof of membership (cluster_auth.h), and clients
// of the public API need none.
//
// Thread-safety: a TlsContext is immutable after creation and may be shared
// by any number of threads; each connection gets its own SSL object.
#pragma once

#include <memory>
#include <string>

#include "clickatron/status.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace clickatron {

struct TlsFiles {
  std::string cert_file;  // PEM: this member's certificate (and chain)
  std::string key_file;   // PEM: its private key (an owner-only file)
  std::string ca_file;    // PEM: the CA that signed every member's certificate
  bool enabled() const { return !cert_file.empty(); }
};

// Why a TLS connection failed, from what OpenSSL left on it: the peer's
// certificate not accepted (not signed by the CA, expired, not naming the
// address), or `openssl_error` (an ERR_get_error code; 0: none), e.g. a
// plain-HTTP server on the port. "" when OpenSSL saw nothing wrong (the
// peer closed, or never answered).
std::string DescribeTlsFailure(const SSL* ssl, unsigned long openssl_error);

class TlsContext {
 public:
  // Loads and checks the files: the key must match the certificate.
  static Result<std::shared_ptr<TlsContext>> ForServer(const TlsFiles& files);
  // Verifies servers against files.ca_file.
  static Result<std::shared_ptr<TlsContext>> ForClient(const TlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new SSL for one accepted connection; nullptr when out of memory.
  SSL* NewServerSsl() const;
  // A new SSL for one connection to `host` (a name or an IP literal, checked
  // against the peer's certificate; SNI for names); nullptr when that check
  // cannot be set up.
  SSL* NewClientSsl(const std::string& host) const;

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

}  // namespace clickatron
