//! One turn per thread: the claim taken here and in the store keeps a second send out on this
//! instance and on any other over the same database, and lets the next one in once the turn ended.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::panic)]

use crate::common;

use common::{USER, conversation, finish, message, service, upstream};
use promptgate_llm::scripted::{Script, content_chunk, role_chunk, text};
use promptgate_service::ServiceError;
use promptgate_store::testing::TestDb;

async fn a_busy_thread_refuses_a_second_send_on_every_instance(db: TestDb) {
    let upstream = upstream().await;
    let here = service(db.store().clone(), &upstream, |_| {}).await;
    let there = service(db.another_instance().await, &upstream, |_| {}).await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(content_chunk("Thinking"))
            .hang(),
    );
    let running = here.send(message("busy", Some("m1"), "First")).await.unwrap();
    common::until("the turn reaches the model", || upstream.calls() == 1).await;

    for (instance, service) in [("this", &here), ("another", &there)] {
        match service.send(message("busy", Some("m2"), "Second")).await {
            Err(ServiceError::Busy(thread)) => assert_eq!(thread, "busy"),
            Err(other) => panic!("{instance} instance: {other}"),
            Ok(_) => panic!("{instance} instance started a second turn in a busy thread"),
        }
    }
    assert_eq!(upstream.calls(), 1, "a refused send never reaches the model");

    assert!(there.stop(USER, "busy").await, "another instance stops the turn");
    finish(running).await;
    upstream.push(text(["Next."]));
    let next = there.send(message("busy", Some("m3"), "Third")).await.unwrap();
    assert_eq!(finish(next).await, "Next.");

    let stored = conversation(&here, "busy", true).await;
    let users: Vec<&str> = stored
        .iter()
        .filter(|(role, _)| *role == "user")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(users, ["First", "Third"], "nothing of the refused send is stored");
}

promptgate_store::on_both_backends!(a_busy_thread_refuses_a_second_send_on_every_instance);
