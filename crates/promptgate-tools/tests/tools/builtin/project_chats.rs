//! `search_project_chats`: hits from sibling chats only, bounded, and what an empty search says.

use promptgate_tools::builtin::SearchProjectChats;

use crate::builtin::common::*;

/// Alice's project "Garden" with the current chat `now` and two siblings (one untitled), a chat of hers
/// outside the project, and Bob's chat; every one of them mentions compost.
async fn garden(store: &Store) -> (String, SearchProjectChats) {
    let alice = user(store, "Alice").await;
    let bob = user(store, "Bob").await;
    let garden = project(store, &alice, "Garden").await;
    thread(store, &alice, "now", Some(&garden), Some("Current chat")).await;
    thread(store, &alice, "roses", Some(&garden), Some("Pruning roses")).await;
    thread(store, &alice, "soil", Some(&garden), None).await;
    thread(store, &alice, "loose", None, Some("Compost elsewhere")).await;
    thread(store, &bob, "bobs", None, Some("Bob's compost")).await;
    say(store, &alice, "now", "Tell me about compost again.").await;
    say(store, &alice, "roses", "Roses like compost in early spring.").await;
    say(store, &alice, "soil", "Clay soil improves with compost and grit.").await;
    say(store, &alice, "loose", "compost compost compost").await;
    say(store, &bob, "bobs", "my compost recipe").await;

    let mut siblings = store.sibling_threads(&alice, &garden, "now").await.unwrap();
    assert_eq!(siblings.len(), 2);
    // Even a sibling list that names another user's chat cannot reach into it.
    siblings.push(("bobs".to_owned(), Some("Bob's compost".to_owned())));
    let tool = SearchProjectChats::new(storage(store), &alice, "Garden", siblings);
    (alice, tool)
}

promptgate_store::on_both_backends! {
    async fn hits_come_only_from_sibling_chats(store: &Store) {
        let (_, tool) = garden(store).await;

        let output = run(&tool, json!({"query": "compost"})).await;

        let mut hits = output.output["hits"].as_array().unwrap().clone();
        hits.sort_by_key(|h| h["thread_id"].as_str().unwrap().to_owned());
        assert_eq!(
            hits,
            [
                json!({"thread_id": "roses", "title": "Pruning roses", "excerpt": "Roses like compost in early spring."}),
                json!({"thread_id": "soil", "title": "Untitled chat", "excerpt": "Clay soil improves with compost and grit."}),
            ]
        );
        let text = output.model_text.unwrap();
        let mut blocks: Vec<&str> = text.split("\n\n").collect();
        blocks.sort_unstable();
        assert_eq!(
            blocks,
            [
                "From \"Pruning roses\":\nRoses like compost in early spring.",
                "From \"Untitled chat\":\nClay soil improves with compost and grit.",
            ]
        );
    }

    async fn at_most_eight_hits_are_returned(store: &Store) {
        let (alice, tool) = garden(store).await;
        for n in 0..10 {
            say(store, &alice, "soil", &format!("Note {n}: more compost needed.")).await;
        }
        let output = run(&tool, json!({"query": "compost"})).await;
        assert_eq!(output.output["hits"].as_array().unwrap().len(), 8);
        assert_eq!(output.model_text.unwrap().matches("From \"").count(), 8);
    }

    async fn no_hits_say_so_and_suggest_other_words(store: &Store) {
        let (_, tool) = garden(store).await;
        let output = run(&tool, json!({"query": " mulch "})).await;
        assert_eq!(output.output, json!({"hits": []}));
        assert_eq!(
            output.model_text.as_deref(),
            Some(
                "Nothing in the other chats of project \"Garden\" matched \"mulch\". This is a keyword \
                 search, not a semantic one: try different words, such as synonyms or a name mentioned in \
                 that chat."
            )
        );
    }
}

#[tokio::test]
async fn a_blank_query_asks_for_keywords() {
    let db = promptgate_store::testing::TestDb::sqlite().await;
    let alice = user(&db, "Alice").await;
    let tool = SearchProjectChats::new(
        storage(db.store()),
        &alice,
        "Garden",
        vec![("x".to_owned(), None)],
    );
    let error = refused(&tool, json!({"query": "   "})).await;
    assert_eq!(
        error,
        ToolError::InvalidArguments("the query is empty; give one or more keywords to look for".to_owned())
    );
}
