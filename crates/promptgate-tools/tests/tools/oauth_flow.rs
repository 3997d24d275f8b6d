//! Authorization-code flow with PKCE, token renewal, sealing and disconnect, against a loopback
//! OAuth server.
// Helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::HashMap;

use chrono::{Duration, Utc};
use promptgate_core::settings::IntegrationProvider;
use promptgate_core::storage::{TokenVault, VaultKey};
use promptgate_core::tools::ToolError;
use promptgate_tools::oauth::{TokenSealer, TokenSet, new_state, pkce_pair, s256_challenge};
use support::*;

#[test]
fn pkce_challenge_is_the_s256_of_the_verifier() {
    // Vector computed independently (Python hashlib + urlsafe_b64encode).
    assert_eq!(
        s256_challenge("Zx9-Ktq_3aVb.7LmN~0pQrStUvWxYz1234567890abcdEF"),
        "Hxpqn27bn_ogNjJVdYzePeQ1Rcm02y2LhxfLn6GV8s4"
    );
    let pair = pkce_pair();
    assert!((43..=128).contains(&pair.verifier.len()));
    assert!(
        pair.verifier
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
    );
    assert_eq!(pair.challenge, s256_challenge(&pair.verifier));
    assert_ne!(pkce_pair().verifier, pair.verifier, "every pair is fresh");
    assert_ne!(new_state(), new_state());
}

#[test]
fn authorization_url_carries_state_challenge_and_scopes() {
    let config = provider_config(IntegrationProvider::Google, "http://127.0.0.1:9");
    let url = url::Url::parse(&config.authorization_url("st-123", "chal-456").unwrap()).unwrap();
    assert_eq!(url.path(), "/authorize");
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "client-abc");
    assert_eq!(query["redirect_uri"], "http://127.0.0.1/callback");
    assert_eq!(query["state"], "st-123");
    assert_eq!(query["code_challenge"], "chal-456");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(
        query["access_type"], "offline",
        "Google only returns a refresh token for offline access"
    );
    assert!(
        query["scope"]
            .split(' ')
            .any(|s| s == "https://www.googleapis.com/auth/gmail.compose")
    );
    assert!(
        !url.as_str().contains("secret-xyz"),
        "the client secret never goes to the browser"
    );

    let microsoft = provider_config(IntegrationProvider::Microsoft, "http://127.0.0.1:9");
    let url = url::Url::parse(&microsoft.authorization_url("s", "c").unwrap()).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert!(query["scope"].split(' ').any(|s| s == "offline_access"));
}

#[test]
fn a_started_authorization_keeps_what_the_callback_needs() {
    let config = provider_config(IntegrationProvider::Microsoft, "http://127.0.0.1:9");
    let pending = config.start_authorization().unwrap();
    let url = url::Url::parse(&pending.url).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(query["state"], pending.state);
    assert_eq!(query["code_challenge"], s256_challenge(&pending.code_verifier));
    assert!(
        !pending.url.contains(&pending.code_verifier),
        "the verifier stays on the server"
    );
    assert!(!format!("{pending:?}").contains(&pending.code_verifier));
    assert_ne!(config.start_authorization().unwrap().state, pending.state);
}

/// Google configured against `oauth_base` with no tokens kept, as before the user connects.
async fn google_not_yet_connected(oauth_base: &str) -> Connected {
    let setup = connected(IntegrationProvider::Google, oauth_base, valid_tokens("unused")).await;
    setup
        .vault
        .delete(VaultKey {
            user_id: USER,
            provider: IntegrationProvider::Google,
        })
        .await
        .unwrap();
    setup
}

#[tokio::test]
async fn connecting_exchanges_the_code_and_stores_the_tokens_sealed() {
    let oauth = serve(oauth_routes()).await;
    let setup = google_not_yet_connected(&oauth.base).await;

    setup.tokens.connect("good-code", "the-verifier").await.unwrap();

    let requests = oauth.log.to_path("/token");
    assert_eq!(requests.len(), 1);
    let form = requests[0].form();
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], "good-code");
    assert_eq!(form["code_verifier"], "the-verifier");
    assert_eq!(form["redirect_uri"], "http://127.0.0.1/callback");
    let sealed = setup.vault.raw(USER, IntegrationProvider::Google).unwrap();
    assert!(
        !sealed.contains("first-token") && !sealed.contains("refresh-1"),
        "tokens are encrypted at rest"
    );
    let stored = setup.sealer.open(&sealed).unwrap();
    assert_eq!(stored.refresh_token.as_deref(), Some("refresh-1"));
    assert_eq!(stored.scope.as_deref(), Some("mail"));
    assert!(stored.expires_at.unwrap() > Utc::now() + Duration::minutes(55));
    assert_eq!(setup.tokens.access_token().await.unwrap(), "first-token");
}

#[tokio::test]
async fn a_rejected_code_gives_a_clear_error_without_secrets() {
    let oauth = serve(oauth_routes()).await;
    let setup = connected(IntegrationProvider::Google, &oauth.base, valid_tokens("unused")).await;
    let err = setup
        .tokens
        .connect("stale-code", "v")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("reconnect Google"), "{err}");
    assert!(
        !err.contains("secret-xyz") && !err.contains("stale-code"),
        "{err}"
    );
}

#[tokio::test]
async fn a_token_about_to_expire_is_renewed_once_and_keeps_its_refresh_token() {
    let oauth = serve(oauth_routes()).await;
    let mut expiring = valid_tokens("old-token");
    expiring.expires_at = Some(Utc::now() + Duration::seconds(20));
    let setup = connected(IntegrationProvider::Microsoft, &oauth.base, expiring).await;

    let calls: Vec<_> = (0..6).map(|_| setup.tokens.access_token()).collect();
    let tokens = futures::future::join_all(calls).await;

    assert!(
        tokens.iter().all(|t| t.as_deref() == Ok("fresh-token")),
        "{tokens:?}"
    );
    let refreshes = oauth.log.to_path("/token");
    assert_eq!(refreshes.len(), 1, "concurrent callers share one renewal");
    assert_eq!(refreshes[0].form()["grant_type"], "refresh_token");
    let stored = setup
        .sealer
        .open(&setup.vault.raw(USER, IntegrationProvider::Microsoft).unwrap())
        .unwrap();
    assert_eq!(stored.access_token, "fresh-token");
    assert_eq!(
        stored.refresh_token.as_deref(),
        Some("refresh-1"),
        "the old refresh token is kept"
    );
}

#[tokio::test]
async fn one_send_reads_the_vault_once_while_the_token_is_valid() {
    let oauth = serve(oauth_routes()).await;
    let setup = connected(IntegrationProvider::Google, &oauth.base, valid_tokens("good")).await;
    let per_send = setup.tokens.clone();
    for _ in 0..5 {
        assert_eq!(per_send.access_token().await.unwrap(), "good");
    }
    assert_eq!(setup.vault.loads.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_expired_token_without_refresh_token_asks_to_reconnect() {
    let oauth = serve(oauth_routes()).await;
    let expired = TokenSet {
        access_token: "old".into(),
        refresh_token: None,
        expires_at: Some(Utc::now() - Duration::minutes(5)),
        scope: None,
    };
    let setup = connected(IntegrationProvider::Google, &oauth.base, expired).await;
    let err = setup.tokens.access_token().await.unwrap_err();
    assert!(err.to_string().contains("reconnect Google"), "{err}");
    assert!(oauth.log.all().is_empty());
}

/// The user removed the app's access at Microsoft: its refresh token is refused (`invalid_grant`).
/// That is the one failure only the user can mend, so it is told apart from the others: the turn
/// asks them to connect again (the consent card) instead of failing the call outright.
#[tokio::test]
async fn a_refresh_token_the_provider_refuses_asks_the_user_to_connect_again() {
    let oauth = serve(oauth_routes()).await;
    let expired = TokenSet {
        access_token: "old".into(),
        refresh_token: Some("refresh-revoked".into()),
        expires_at: Some(Utc::now() - Duration::minutes(5)),
        scope: None,
    };
    let setup = connected(IntegrationProvider::Microsoft, &oauth.base, expired).await;
    match setup.tokens.access_token().await {
        Err(ToolError::Unauthorized(text)) => assert!(text.contains("reconnect Microsoft"), "{text}"),
        other => panic!("expected the grant to be reported as ended: {other:?}"),
    }
    assert_eq!(oauth.log.to_path("/token").len(), 1, "renewal was tried once");
}

#[tokio::test]
async fn a_provider_that_is_not_connected_says_so() {
    let oauth = serve(oauth_routes()).await;
    let setup = google_not_yet_connected(&oauth.base).await;
    let err = setup.tokens.access_token().await.unwrap_err();
    assert_eq!(
        err,
        ToolError::Failed(
            "Google is not connected; connect Google in the integration settings first".to_owned()
        )
    );
}

#[test]
fn sealing_round_trips_and_detects_tampering() {
    let sealer = TokenSealer::from_key(&[9u8; 32]);
    let tokens = valid_tokens("access-secret");
    let sealed = sealer.seal(&tokens).unwrap();
    assert!(!sealed.contains("access-secret"));
    assert_eq!(sealer.open(&sealed).unwrap(), tokens);
    assert_ne!(sealer.seal(&tokens).unwrap(), sealed, "a fresh nonce per seal");

    let mut tampered: Vec<char> = sealed.chars().collect();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    assert!(sealer.open(&tampered).is_err(), "a modified blob is refused");
    assert!(
        TokenSealer::from_key(&[8u8; 32]).open(&sealed).is_err(),
        "another key cannot open it"
    );
    assert!(sealer.open("not a sealed blob").is_err());
    assert!(
        format!("{tokens:?}").find("access-secret").is_none(),
        "Debug hides tokens"
    );
}

#[test]
fn the_sealing_key_is_read_from_base64_of_32_bytes() {
    use base64::Engine as _;
    let key = base64::engine::general_purpose::STANDARD.encode([3u8; 32]);
    let from_config = TokenSealer::from_base64(&key).unwrap();
    let sealed = TokenSealer::from_key(&[3u8; 32])
        .seal(&valid_tokens("x"))
        .unwrap();
    assert_eq!(from_config.open(&sealed).unwrap().access_token, "x");
    let short = base64::engine::general_purpose::STANDARD.encode([3u8; 16]);
    let err = TokenSealer::from_base64(&short).unwrap_err().to_string();
    assert!(err.contains("32 bytes"), "{err}");
    assert!(TokenSealer::from_base64("***").is_err());
}

#[tokio::test]
async fn disconnecting_google_revokes_the_grant_and_forgets_the_tokens() {
    let oauth = serve(oauth_routes()).await;
    let setup = connected(IntegrationProvider::Google, &oauth.base, valid_tokens("t")).await;
    setup.tokens.disconnect().await.unwrap();
    let revocations = oauth.log.to_path("/revoke");
    assert_eq!(revocations.len(), 1);
    assert_eq!(revocations[0].form()["token"], "refresh-1");
    assert!(setup.vault.raw(USER, IntegrationProvider::Google).is_none());
}

#[tokio::test]
async fn disconnecting_microsoft_only_forgets_the_tokens() {
    let oauth = serve(oauth_routes()).await;
    let setup = connected(IntegrationProvider::Microsoft, &oauth.base, valid_tokens("t")).await;
    setup.tokens.disconnect().await.unwrap();
    assert!(oauth.log.all().is_empty(), "Microsoft has no revocation endpoint");
    assert!(setup.vault.raw(USER, IntegrationProvider::Microsoft).is_none());
}

#[tokio::test]
async fn tokens_are_forgotten_even_when_revocation_fails() {
    let oauth = serve(axum::Router::new().route(
        "/revoke",
        axum::routing::post(|| async { axum::http::StatusCode::INTERNAL_SERVER_ERROR }),
    ))
    .await;
    let setup = connected(IntegrationProvider::Google, &oauth.base, valid_tokens("t")).await;
    setup.tokens.disconnect().await.unwrap();
    assert_eq!(oauth.log.to_path("/revoke").len(), 1);
    assert!(setup.vault.raw(USER, IntegrationProvider::Google).is_none());
}
