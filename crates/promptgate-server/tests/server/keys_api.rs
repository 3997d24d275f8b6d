//! Keys and users as an API: a user's own keys (`/v1/keys`) and the users an admin manages
//! (`/v1/admin/users`), on two instances of one database, so that a key deleted or a user disabled
//! on one is refused by the other at once.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{self, Backend, Gateway, error_code, scripted_config_with};
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_server::config::AuthMode;
use reqwest::StatusCode;
use serde_json::json;

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

async fn keys_are_the_users_own_and_a_deleted_key_is_refused_on_the_other_instance(backend: Backend) {
    let (a, b, _admin, ada) = two_instances(backend).await;
    let later = chrono::Utc::now().timestamp_millis() + 86_400_000;
    let (status, created) = a
        .post_as("/v1/keys", json!({"name": "laptop", "expires_at": later}), &ada)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let secret = created["secret"].as_str().unwrap().to_owned();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["expires_at"], later);

    // The new key works on the other instance, which lists it without its secret and with its use.
    let (status, listed) = b.get_as("/v1/keys", &secret).await;
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
    let (status, err) = a.delete_as(&format!("/v1/keys/{id}"), &_admin).await;
    assert_eq!((status, error_code(&err)), (StatusCode::NOT_FOUND, "not_found"));
    let (status, err) = a.post_as("/v1/keys", json!({"name": " "}), &ada).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );
    let (status, err) = a
        .post_as("/v1/keys", json!({"name": "old", "expires_at": 1}), &ada)
        .await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );

    // Deleted on one instance, refused on the other at once.
    let (status, _) = a.delete_as(&format!("/v1/keys/{id}"), &ada).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, err) = b.get_as("/v1/keys", &secret).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let (status, _) = b.get_as("/v1/keys", &ada).await;
    assert_eq!(status, StatusCode::OK, "the user's other key still works");
}

common::on_both_backends!(keys_are_the_users_own_and_a_deleted_key_is_refused_on_the_other_instance);

async fn admins_manage_users_and_a_disabled_user_is_refused_on_the_other_instance(backend: Backend) {
    let (a, b, admin, ada) = two_instances(backend).await;
    let (status, err) = a.get_as("/v1/admin/users", &ada).await;
    assert_eq!((status, error_code(&err)), (StatusCode::FORBIDDEN, "admin_only"));

    let (status, created) = a.post_as("/v1/admin/users", json!({"name": "bob"}), &admin).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let bob = created["user"]["id"].as_str().unwrap().to_owned();
    let bob_key = created["key"]["secret"].as_str().unwrap().to_owned();
    assert_eq!(created["user"]["admin"], false);
    let (status, _) = b.get_as("/v1/keys", &bob_key).await;
    assert_eq!(status, StatusCode::OK);
    let (status, thread) = b
        .post_as("/v1/threads", json!({"title": "bob's"}), &bob_key)
        .await;
    assert!(status.is_success(), "{thread}");

    // Disabled on one instance: refused on the other at once, data kept; enabled: back.
    let path = format!("/v1/admin/users/{bob}");
    let (status, user) = a.patch_as(&path, json!({"disabled": true}), &admin).await;
    assert_eq!(status, StatusCode::OK, "{user}");
    assert!(user["disabled_at"].is_i64(), "{user}");
    let (status, err) = b.get_as("/v1/keys", &bob_key).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    a.patch_as(&path, json!({"disabled": false}), &admin).await;
    let (status, threads) = b.get_as("/v1/threads", &bob_key).await;
    assert_eq!(status, StatusCode::OK);
    assert!(threads.to_string().contains("bob's"), "{threads}");

    // An admin made on one instance is one on the other; an admin cannot lock themselves out.
    a.patch_as(&path, json!({"admin": true}), &admin).await;
    let (status, listed) = b.get_as("/v1/admin/users", &bob_key).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["data"].as_array().unwrap().len(), 3, "{listed}");
    let (status, err) = b.patch_as(&path, json!({"disabled": true}), &bob_key).await;
    assert_eq!((status, error_code(&err)), (StatusCode::CONFLICT, "conflict"));
    a.patch_as(&path, json!({"admin": false}), &admin).await;
    let (status, err) = b.get_as("/v1/admin/users", &bob_key).await;
    assert_eq!((status, error_code(&err)), (StatusCode::FORBIDDEN, "admin_only"));

    // Deleted: refused, gone from the list, and their threads with them.
    let (status, _) = a.delete_as(&path, &admin).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = b.get_as("/v1/threads", &bob_key).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (_, listed) = b.get_as("/v1/admin/users", &admin).await;
    assert!(!listed.to_string().contains(&bob), "{listed}");
    assert!(
        a.store
            .get_thread(&bob, thread["id"].as_str().unwrap())
            .await
            .unwrap()
            .is_none()
    );
    let (status, err) = a.delete_as(&path, &admin).await;
    assert_eq!((status, error_code(&err)), (StatusCode::NOT_FOUND, "not_found"));
}

common::on_both_backends!(admins_manage_users_and_a_disabled_user_is_refused_on_the_other_instance);
