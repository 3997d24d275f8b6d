//! Who promptgate is at an authorization server that takes Client ID Metadata Documents (the
//! document's URL is the client id, so no registration is needed), and which scopes it asks for:
//! the union of what was granted and what the server asked for since (step-up).

use serde_json::{Value, json};

/// Longest scope list a server's challenge may bring; longer ones are not acted on.
const MAX_SCOPE_LEN: usize = 1024;

/// The Client ID Metadata Document served at `client_id`: a public web client whose only redirect
/// is the gateway's callback. Its `client_id` must be the URL it is served at, exactly.
pub fn client_metadata_document(client_id: &str, redirect_uri: &str, client_name: &str) -> Value {
    let mut document = client_metadata(redirect_uri, client_name);
    document["client_id"] = json!(client_id);
    document
}

/// What promptgate says of itself as a client, in a metadata document or a registration: a web
/// application without a secret, using the code flow with refresh tokens.
pub(crate) fn client_metadata(redirect_uri: &str, client_name: &str) -> Value {
    json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    })
}

/// A scope list as RFC 6749 §3.3 has it: scope tokens of printable ASCII without `"` or `\`,
/// separated by spaces, and not absurdly long.
pub fn valid_scope(scope: &str) -> bool {
    scope.len() <= MAX_SCOPE_LEN
        && scope
            .chars()
            .all(|c| c == ' ' || (c.is_ascii_graphic() && c != '"' && c != '\\'))
}

/// Every scope of the given space-separated lists once, in the order first seen; `None` when
/// there is none.
pub fn union_scopes<'a>(lists: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for scope in lists.into_iter().flatten().flat_map(str::split_whitespace) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_keeps_each_scope_once_in_first_seen_order() {
        assert_eq!(
            union_scopes([Some("notes:read"), None, Some("notes:write  notes:read")]).as_deref(),
            Some("notes:read notes:write")
        );
        assert_eq!(union_scopes([None, Some("  ")]), None);
    }

    #[test]
    fn scopes_are_scope_tokens_only() {
        assert!(valid_scope("notes:read files.write offline_access"));
        assert!(!valid_scope("a\"b"));
        assert!(!valid_scope("a\nb"));
        assert!(!valid_scope(&"x".repeat(MAX_SCOPE_LEN + 1)));
    }

    #[test]
    fn the_document_names_its_own_url_and_the_callback() {
        let document = client_metadata_document(
            "https://gw.ex.com/v1/mcp-servers/oauth/client.json",
            "https://gw.ex.com/v1/mcp-servers/oauth/callback",
            "promptgate",
        );
        assert_eq!(
            document["client_id"],
            "https://gw.ex.com/v1/mcp-servers/oauth/client.json"
        );
        assert_eq!(
            document["redirect_uris"][0],
            "https://gw.ex.com/v1/mcp-servers/oauth/callback"
        );
        assert_eq!(document["token_endpoint_auth_method"], "none");
    }
}
