//! Keys and users as an API: a user's own keys (`/v1/keys`) and the users an admin manages
//! (`/v1/admin/users`), on two instances of one database, so that a key deleted or a user disabled
//! on one is refused by the other at once.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{self, Backend, Gateway, error_code, scripted_config_with};
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Two instances in tokens mode on one database and their scripted upstream, an admin and a
/// user with their CLI tokens.
pub struct Pair {
    pub a: Gateway,
    pub b: Gateway,
    pub upstream: ScriptedUpstream,
    pub admin: String,
    pub ada: String,
}

async fn two_instances(backend: Backend) -> (Gateway, Gateway, String, String) {
    let pair = pair(backend).await;
    (pair.a, pair.b, pair.admin, pair.ada)
}

pub async fn pair(backend: Backend) -> Pair {
    pair_with(backend, "").await
}

/// [`pair`] with more configuration (see `scripted_config_with`).
pub async fn pair_with(backend: Backend, extra_toml: &str) -> Pair {
    common::init();
    let upstream = promptgate_llm::scripted::ScriptedUpstream::start().await.unwrap();
    let config = || scripted_config_with(AuthMode::Tokens, &upstream.base_url(), extra_toml);
    let a = Gateway::start(backend, config()).await;
    let b = a.another_instance(config()).await;
    let admin = a.store.create_user("root").await.unwrap();
    a.store.set_admin(&admin.id, true).await.unwrap();
    let admin_token = a.store.issue_token(&admin.id).await.unwrap();
    let ada = a.store.create_user("ada").await.unwrap();
    let ada_token = a.store.issue_token(&ada.id).await.unwrap();
    Pair {
        a,
        b,
        upstream,
        admin: admin_token,
        ada: ada_token,
    }
}

async fn call(
    gw: &Gateway,
    method: Method,
    path: &str,
    body: Option<Value>,
    token: &str,
) -> (StatusCode, Value) {
    gw.call(method, path, body, Some(token)).await
}

async fn keys_are_the_users_own(backend: Backend) {
    let (a, b, _admin, ada) = two_instances(backend).await;
    let later = chrono::Utc::now().timestamp_millis() + 86_400_000;
    let (status, created) = call(
        &a,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "laptop", "expires_at": later})),
        &ada,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let secret = created["secret"].as_str().unwrap().to_owned();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["expires_at"], later);

    // The new key works on the other instance, which lists it without its secret and with its use.
    let (status, listed) = call(&b, Method::GET, "/v1/keys", None, &secret).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let laptop = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id.as_str())
        .unwrap();
    assert_eq!(laptop["name"], "laptop");
    assert!(laptop.get("secret").is_none(), "{laptop}");
    assert!(laptop["last_used_at"].is_i64(), "{laptop}");
    assert_eq!(
        listed["data"].as_array().unwrap().len(),
        2,
        "the CLI's token is a key too: {listed}"
    );

    // Nobody else's key can be deleted; a bad body is a JSON error.
    let (status, err) = call(&a, Method::DELETE, &format!("/v1/keys/{id}"), None, &_admin).await;
    assert_eq!((status, error_code(&err)), (StatusCode::NOT_FOUND, "not_found"));
    let (status, err) = call(&a, Method::POST, "/v1/keys", Some(json!({"name": " "})), &ada).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );
    let (status, err) = call(
        &a,
        Method::POST,
        "/v1/keys",
        Some(json!({"name": "old", "expires_at": 1})),
        &ada,
    )
    .await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );

    // Deleted on one instance, refused on the other at once.
    let (status, _) = call(&a, Method::DELETE, &format!("/v1/keys/{id}"), None, &ada).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, err) = call(&b, Method::GET, "/v1/keys", None, &secret).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let (status, _) = call(&b, Method::GET, "/v1/keys", None, &ada).await;
    assert_eq!(status, StatusCode::OK, "the user's other key still works");
}

#[tokio::test]
async fn keys_are_the_users_own_and_a_deleted_key_is_refused_on_the_other_instance_postgres() {
    keys_are_the_users_own(Backend::Postgres).await;
}

#[tokio::test]
async fn keys_are_the_users_own_and_a_deleted_key_is_refused_on_the_other_instance_sqlite() {
    keys_are_the_users_own(Backend::Sqlite).await;
}

async fn admins_manage_users(backend: Backend) {
    let (a, b, admin, ada) = two_instances(backend).await;
    let (status, err) = call(&a, Method::GET, "/v1/admin/users", None, &ada).await;
    assert_eq!((status, error_code(&err)), (StatusCode::FORBIDDEN, "admin_only"));

    let (status, created) = call(
        &a,
        Method::POST,
        "/v1/admin/users",
        Some(json!({"name": "bob"})),
        &admin,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let bob = created["user"]["id"].as_str().unwrap().to_owned();
    let bob_key = created["key"]["secret"].as_str().unwrap().to_owned();
    assert_eq!(created["user"]["admin"], false);
    let (status, _) = call(&b, Method::GET, "/v1/keys", None, &bob_key).await;
    assert_eq!(status, StatusCode::OK);
    let (status, thread) = call(
        &b,
        Method::POST,
        "/v1/threads",
        Some(json!({"title": "bob's"})),
        &bob_key,
    )
    .await;
    assert!(status.is_success(), "{thread}");

    // Disabled on one instance: refused on the other at once, data kept; enabled: back.
    let path = format!("/v1/admin/users/{bob}");
    let (status, user) = call(&a, Method::PATCH, &path, Some(json!({"disabled": true})), &admin).await;
    assert_eq!(status, StatusCode::OK, "{user}");
    assert!(user["disabled_at"].is_i64(), "{user}");
    let (status, err) = call(&b, Method::GET, "/v1/keys", None, &bob_key).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    call(&a, Method::PATCH, &path, Some(json!({"disabled": false})), &admin).await;
    let (status, threads) = call(&b, Method::GET, "/v1/threads", None, &bob_key).await;
    assert_eq!(status, StatusCode::OK);
    assert!(threads.to_string().contains("bob's"), "{threads}");

    // An admin made on one instance is one on the other; an admin cannot lock themselves out.
    call(&a, Method::PATCH, &path, Some(json!({"admin": true})), &admin).await;
    let (status, listed) = call(&b, Method::GET, "/v1/admin/users", None, &bob_key).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["data"].as_array().unwrap().len(), 3, "{listed}");
    let (status, err) = call(
        &b,
        Method::PATCH,
        &path,
        Some(json!({"disabled": true})),
        &bob_key,
    )
    .await;
    assert_eq!((status, error_code(&err)), (StatusCode::CONFLICT, "conflict"));
    call(&a, Method::PATCH, &path, Some(json!({"admin": false})), &admin).await;
    let (status, err) = call(&b, Method::GET, "/v1/admin/users", None, &bob_key).await;
    assert_eq!((status, error_code(&err)), (StatusCode::FORBIDDEN, "admin_only"));

    // Deleted: refused, gone from the list, and their threads with them.
    let (status, _) = call(&a, Method::DELETE, &path, None, &admin).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&b, Method::GET, "/v1/threads", None, &bob_key).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, listed) = call(&b, Method::GET, "/v1/admin/users", None, &admin).await;
    assert!(!listed.to_string().contains(&bob), "{listed}");
    assert!(
        a.store
            .get_thread(&bob, thread["id"].as_str().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    let (status, err) = call(&a, Method::DELETE, &path, None, &admin).await;
    assert_eq!((status, error_code(&err)), (StatusCode::NOT_FOUND, "not_found"));
}

#[tokio::test]
async fn admins_manage_users_and_a_disabled_user_is_refused_on_the_other_instance_postgres() {
    admins_manage_users(Backend::Postgres).await;
}

#[tokio::test]
async fn admins_manage_users_and_a_disabled_user_is_refused_on_the_other_instance_sqlite() {
    admins_manage_users(Backend::Sqlite).await;
}
