#ifndef CHORUS_COPENSSL_SHIM_H
#define CHORUS_COPENSSL_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/// HMAC-SHA256 of `length` bytes at `data` under the `key_length`-byte `key`, written to the
/// 32 bytes at `tag`. Returns 1 on success, 0 on failure (the tag is then not to be used).
/// `data` may be NULL when `length` is 0.
static inline int chorus_hmac_sha256(const uint8_t *key, size_t key_length, const uint8_t *data, size_t length,
                                     uint8_t tag[32]) {
    static const uint8_t nothing[1] = {0};
    unsigned int written = 0;
    if (key_length > INT32_MAX) return 0;
    if (HMAC(EVP_sha256(), key_length ? key : nothing, (int)key_length, length ? data : nothing, length, tag, &written) == NULL) {
        return 0;
    }
    return written == 32;
}

/// Whether the `length` bytes at `a` and `b` are equal, in time that depends only on
/// `length` (OpenSSL's own comparison, written so that a compiler cannot shortcut it).
static inline int chorus_constant_time_equal(const uint8_t *a, const uint8_t *b, size_t length) {
    return CRYPTO_memcmp(a, b, length) == 0;
}

#endif
