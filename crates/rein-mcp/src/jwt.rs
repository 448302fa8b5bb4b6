//! The signed JWT a `private_key_jwt` client sends instead of a secret
//! (RFC 7523): header and claims (`iss` and `sub` the client id, `aud` the
//! authorization server, a short life and a unique `jti`), signed with
//! rustls's crypto provider (ring) by the key of `private_key_file`
//! (PEM, PKCS#8; RSA keys may be PKCS#1).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;

use crate::oauth_config::SigningAlgorithm;

/// How long an assertion is good for.
const LIFETIME_SECS: u64 = 300;

/// A key read from a PEM file, ready to sign.
pub(crate) enum SigningKey {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair, &'static dyn signature::RsaEncoding),
}

impl SigningKey {
    /// Read `pem` as a key for `algorithm`; a key of another kind is
    /// refused with a one-line reason (never the key's bytes).
    pub(crate) fn from_pem(pem: &[u8], algorithm: SigningAlgorithm) -> Result<SigningKey, String> {
        let der = PrivateKeyDer::from_pem_slice(pem)
            .map_err(|_| "the private key file is not a PEM private key".to_string())?;
        let rng = SystemRandom::new();
        let wrong = || format!("the private key does not fit `{}`", algorithm.name());
        let ecdsa = |alg| match &der {
            PrivateKeyDer::Pkcs8(k) => EcdsaKeyPair::from_pkcs8(alg, k.secret_pkcs8_der(), &rng)
                .map(SigningKey::Ecdsa)
                .map_err(|_| wrong()),
            _ => Err(format!("{} (an EC key must be PKCS#8)", wrong())),
        };
        let rsa = |encoding| {
            let pair = match &der {
                PrivateKeyDer::Pkcs8(k) => RsaKeyPair::from_pkcs8(k.secret_pkcs8_der()),
                PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der()),
                _ => return Err(wrong()),
            };
            pair.map(|p| SigningKey::Rsa(p, encoding))
                .map_err(|_| wrong())
        };
        match algorithm {
            SigningAlgorithm::ES256 => ecdsa(&signature::ECDSA_P256_SHA256_FIXED_SIGNING),
            SigningAlgorithm::ES384 => ecdsa(&signature::ECDSA_P384_SHA384_FIXED_SIGNING),
            SigningAlgorithm::RS256 => rsa(&signature::RSA_PKCS1_SHA256),
            SigningAlgorithm::RS384 => rsa(&signature::RSA_PKCS1_SHA384),
            SigningAlgorithm::RS512 => rsa(&signature::RSA_PKCS1_SHA512),
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        let failed = |_| "signing the client assertion failed".to_string();
        match self {
            SigningKey::Ecdsa(pair) => pair
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(failed),
            SigningKey::Rsa(pair, encoding) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(*encoding, &rng, message, &mut out)
                    .map_err(failed)?;
                Ok(out)
            }
        }
    }
}

/// A client assertion for `client_id` addressed to `audience`.
pub(crate) fn assertion(
    key: &SigningKey,
    algorithm: SigningAlgorithm,
    client_id: &str,
    audience: &str,
) -> Result<String, String> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut nonce = [0u8; 16];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| "no randomness for the assertion".to_string())?;
    let jti: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let header = serde_json::json!({"alg": algorithm.name(), "typ": "JWT"});
    let claims = serde_json::json!({
        "iss": client_id, "sub": client_id, "aud": audience,
        "iat": now, "exp": now + LIFETIME_SECS, "jti": jti,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign(signing_input.as_bytes())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key made with ring, as PEM.
    fn p256_pem() -> (String, Vec<u8>) {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            doc.as_ref(),
            &rng,
        )
        .unwrap();
        use ring::signature::KeyPair;
        let public = pair.public_key().as_ref().to_vec();
        let b64 = base64::engine::general_purpose::STANDARD.encode(doc.as_ref());
        (
            format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n"),
            public,
        )
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_public_key_and_names_the_client() {
        let (pem, public) = p256_pem();
        let key = SigningKey::from_pem(pem.as_bytes(), SigningAlgorithm::ES256).unwrap();
        let jwt = assertion(
            &key,
            SigningAlgorithm::ES256,
            "cc-client",
            "https://as.example",
        )
        .unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let signed = format!("{}.{}", parts[0], parts[1]);
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &public)
            .verify(signed.as_bytes(), &sig)
            .expect("the signature verifies");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "cc-client");
        assert_eq!(claims["sub"], "cc-client");
        assert_eq!(claims["aud"], "https://as.example");
        assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());
    }

    #[test]
    fn a_key_that_does_not_fit_the_algorithm_is_refused_plainly() {
        let (pem, _) = p256_pem();
        let err = SigningKey::from_pem(pem.as_bytes(), SigningAlgorithm::RS256)
            .err()
            .unwrap();
        assert_eq!(err, "the private key does not fit `RS256`");
        let err = SigningKey::from_pem(b"not a key", SigningAlgorithm::ES256)
            .err()
            .unwrap();
        assert!(err.contains("not a PEM"), "{err}");
    }
}
