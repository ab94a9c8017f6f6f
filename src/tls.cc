#include "clickatron/tls.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "clickatron/cluster_auth.h"

namespace clickatron {

std::string DescribeTlsFailure(const SSL* ssl, unsigned long openssl_error) {
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      return fmt::format("TLS: the peer's certificate was not accepted ({}; [cluster] tls_ca_file, and the "
                         "certificate's names and dates)",
                         X509_verify_cert_error_string(verify));
    }
  }
  // libevent also keeps SSL_get_error's small codes there (lib 0): not an
  // OpenSSL error to print ("error:00000001:lib(0)::reason(1)").
  if (openssl_error != 0 && ERR_GET_LIB(openssl_error) != 0) {
    char text[256];
    ERR_error_string_n(openssl_error, text, sizeof(text));
    return fmt::format("TLS: {}", text);
  }
  return "";
}
namespace {

// The newest OpenSSL error as text ("" when none), and the queue cleared.
std::string OpenSslError() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out = buf;
  }
  return out;
}

Status TlsError(std::string_view what, const std::string& file) {
  return Status::InvalidArgument(fmt::format("TLS: {} {}: {}", what, file, OpenSslError()), "BAD_TLS_FILE");
}

Result<SSL_CTX*> NewContext(const SSL_METHOD* method, const TlsFiles& files, bool need_identity) {
  if (files.ca_file.empty() || (need_identity && (files.cert_file.empty() || files.key_file.empty()))) {
    return Status::InvalidArgument("TLS: tls_cert_file, tls_key_file and tls_ca_file are needed together", "BAD_CONFIG");
  }
  SSL_CTX* ctx = SSL_CTX_new(method);
  if (ctx == nullptr) return Status::Internal("SSL_CTX_new: " + OpenSslError());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  Status st;
  if (SSL_CTX_load_verify_locations(ctx, files.ca_file.c_str(), nullptr) != 1) {
    st = TlsError("cannot load the CA", files.ca_file);
  } else if (!files.cert_file.empty() && SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1) {
    st = TlsError("cannot load the certificate", files.cert_file);
  } else if (!files.key_file.empty()) {
    // The private key is a secret: the same owner-only rule as the cluster secret.
    st = CheckOwnerOnlyFile(files.key_file, "[cluster] tls_key_file");
    if (st.ok() && SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      st = TlsError("cannot load the private key", files.key_file);
    } else if (st.ok() && SSL_CTX_check_private_key(ctx) != 1) {
      st = TlsError("the private key does not match the certificate", files.key_file);
    }
  }
  if (!st.ok()) {
    SSL_CTX_free(ctx);
    return st;
  }
  return ctx;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::ForServer(const TlsFiles& files) {
  Result<SSL_CTX*> ctx = NewContext(TLS_server_method(), files, /*need_identity=*/true);
  if (!ctx.ok()) return ctx.status();
  return std::shared_ptr<TlsContext>(new TlsContext(*ctx));
}

Result<std::shared_ptr<TlsContext>> TlsContext::ForClient(const TlsFiles& files) {
  Result<SSL_CTX*> ctx = NewContext(TLS_client_method(), files, /*need_identity=*/false);
  if (!ctx.ok()) return ctx.status();
  SSL_CTX_set_verify(*ctx, SSL_VERIFY_PEER, nullptr);
  return std::shared_ptr<TlsContext>(new TlsContext(*ctx));
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

SSL* TlsContext::NewServerSsl() const { return SSL_new(ctx_); }

SSL* TlsContext::NewClientSsl(const std::string& host) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  unsigned char addr[16];
  const bool ip = inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
  // Without the name check any certificate of the CA would do: no SSL then.
  const bool named = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1
                        : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0) == 1 &&
                              SSL_set_tlsext_host_name(ssl, host.c_str()) == 1;
  if (!named) {
    SSL_free(ssl);
    return nullptr;
  }
  return ssl;
}

}  // namespace clickatron
