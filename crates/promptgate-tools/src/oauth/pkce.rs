//! PKCE (RFC 7636) verifier/challenge pairs and the `state` value of an authorization request.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// A verifier kept server-side until the callback, and the challenge sent in the authorization URL.
#[derive(Clone, PartialEq, Eq)]
pub struct PkcePair {
    pub verifier: String,
    pub challenge: String,
}

impl std::fmt::Debug for PkcePair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PkcePair")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

/// A fresh verifier of 64 URL-safe characters (48 random bytes; the RFC allows 43–128) and its
/// S256 challenge.
pub fn pkce_pair() -> PkcePair {
    let verifier = random_token(48);
    let challenge = s256_challenge(&verifier);
    PkcePair { verifier, challenge }
}

/// `BASE64URL(SHA256(verifier))` without padding, as the S256 method defines it.
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// An unguessable value for the `state` parameter (32 random bytes, URL-safe).
pub fn new_state() -> String {
    random_token(32)
}

fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::fill(&mut buf[..]);
    URL_SAFE_NO_PAD.encode(&buf)
}
