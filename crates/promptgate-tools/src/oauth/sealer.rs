//! Encryption of secrets at rest (AES-256-GCM), so a leaked database does not leak access to users'
//! mail or their MCP servers. OAuth token sets and MCP header values and bearer tokens share the key
//! and the `v1.` format.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::{
    STANDARD_NO_PAD_INDIFFERENT, URL_SAFE_NO_PAD, URL_SAFE_NO_PAD_INDIFFERENT,
};

use super::TokenSet;
use promptgate_core::tools::ToolError;

/// Marks the layout `v1.` + base64url(nonce ‖ ciphertext+tag), so the format can change later.
const FORMAT_PREFIX: &str = "v1.";
const NONCE_LEN: usize = 12;

/// Seals and opens [`TokenSet`]s with one server-side key.
pub struct TokenSealer {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for TokenSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSealer(<key>)")
    }
}

impl TokenSealer {
    pub fn from_key(key: &[u8; 32]) -> Self {
        Self {
            cipher: Aes256Gcm::new(&(*key).into()),
        }
    }

    /// Reads the key as configured: base64 (standard or URL-safe, padding optional) of exactly 32 bytes.
    pub fn from_base64(encoded: &str) -> Result<Self, ToolError> {
        let encoded = encoded.trim();
        let bytes = STANDARD_NO_PAD_INDIFFERENT
            .decode(encoded)
            .or_else(|_| URL_SAFE_NO_PAD_INDIFFERENT.decode(encoded))
            .map_err(|_| ToolError::Failed("the token encryption key is not valid base64".to_owned()))?;
        let key: [u8; 32] = bytes.try_into().map_err(|bytes: Vec<u8>| {
            ToolError::Failed(format!(
                "the token encryption key must be 32 bytes, not {}",
                bytes.len()
            ))
        })?;
        Ok(Self::from_key(&key))
    }

    /// A fresh random key in the form [`TokenSealer::from_base64`] reads.
    pub fn generate_key_base64() -> String {
        let mut key = [0u8; 32];
        rand::fill(&mut key[..]);
        URL_SAFE_NO_PAD.encode(key)
    }

    pub fn seal(&self, tokens: &TokenSet) -> Result<String, ToolError> {
        let plaintext = serde_json::to_vec(tokens)
            .map_err(|_| ToolError::Failed("the tokens could not be serialised".to_owned()))?;
        self.seal_bytes(&plaintext)
            .map_err(|_| ToolError::Failed("the tokens could not be encrypted".to_owned()))
    }

    /// Seals any text (an MCP header value or bearer token) in the same format as token sets.
    pub fn seal_text(&self, text: &str) -> Result<String, ToolError> {
        self.seal_bytes(text.as_bytes())
            .map_err(|_| ToolError::Failed("the secret could not be encrypted".to_owned()))
    }

    /// Opens what [`TokenSealer::seal_text`] sealed with this key.
    pub fn open_text(&self, sealed: &str) -> Result<String, ToolError> {
        let unreadable =
            || ToolError::Failed("the stored secret cannot be decrypted with this key".to_owned());
        let plaintext = self.open_bytes(sealed).ok_or_else(unreadable)?;
        String::from_utf8(plaintext).map_err(|_| unreadable())
    }

    fn seal_bytes(&self, plaintext: &[u8]) -> Result<String, aes_gcm::Error> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::fill(&mut nonce[..]);
        let ciphertext = self.cipher.encrypt(&Nonce::from(nonce), plaintext)?;
        let mut blob = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&ciphertext);
        Ok(format!("{FORMAT_PREFIX}{}", URL_SAFE_NO_PAD.encode(blob)))
    }

    /// Fails on anything not sealed by this key: a different key, a modified blob, a foreign format.
    pub fn open(&self, sealed: &str) -> Result<TokenSet, ToolError> {
        let unreadable = || {
            ToolError::Failed("the stored tokens cannot be decrypted; reconnect the integration".to_owned())
        };
        let plaintext = self.open_bytes(sealed).ok_or_else(unreadable)?;
        serde_json::from_slice(&plaintext).map_err(|_| unreadable())
    }

    fn open_bytes(&self, sealed: &str) -> Option<Vec<u8>> {
        let encoded = sealed.strip_prefix(FORMAT_PREFIX)?;
        let blob = URL_SAFE_NO_PAD_INDIFFERENT.decode(encoded).ok()?;
        if blob.len() <= NONCE_LEN {
            return None;
        }
        let (nonce, ciphertext) = blob.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
        self.cipher.decrypt(&Nonce::from(nonce), ciphertext).ok()
    }
}

/// The store seals MCP secrets through this without knowing the cipher.
impl promptgate_core::storage::SecretBox for TokenSealer {
    fn seal(&self, plaintext: &str) -> Result<String, String> {
        self.seal_text(plaintext).map_err(|e| e.to_string())
    }

    fn open(&self, sealed: &str) -> Result<String, String> {
        self.open_text(sealed).map_err(|e| e.to_string())
    }
}
