#ifndef CCSD_COPENSSL_SHIM_H
#define CCSD_COPENSSL_SHIM_H
// OpenSSL for the TLS module. Macros that Swift cannot import are wrapped as static inline functions.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/rand.h>

static inline long ccsd_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline int ccsd_SSL_CTX_set_min_proto_version_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}
static inline long ccsd_SSL_CTX_set_partial_write_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}
static inline uint64_t ccsd_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t ccsd_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline long ccsd_BIO_pending(BIO *b) { return BIO_ctrl_pending(b); }
static inline int ccsd_BIO_set_mem_eof_return(BIO *b, int v) { return (int)BIO_set_mem_eof_return(b, v); }
static inline int ccsd_X509_NAME_add_text(X509_NAME *n, const char *field, const char *value) {
    return X509_NAME_add_entry_by_txt(n, field, MBSTRING_ASC, (const unsigned char *)value, -1, -1, 0);
}
static inline int ccsd_ERR_GET_REASON(unsigned long e) { return ERR_GET_REASON(e); }
static inline long ccsd_SSL_CTX_add_extra_chain_cert(SSL_CTX *ctx, X509 *x509) {
    return SSL_CTX_add_extra_chain_cert(ctx, x509);
}
static inline EVP_PKEY *ccsd_EVP_EC_gen_P256(void) { return EVP_EC_gen("P-256"); }
static inline uint64_t ccsd_SSL_OP_CIPHER_SERVER_PREFERENCE(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
/// Sets a fresh X509V3 extension context with no config database (X509V3_set_ctx_nodb is a macro).
static inline void ccsd_X509V3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }

#endif
