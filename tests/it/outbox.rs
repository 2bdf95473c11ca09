//! Outbox delivery exactly once to the receiver (issue 14, defect 3), driven through the real
//! product (a confirmation sent over MCP queues the message) and the dispatcher, with a
//! webhook to a local receiver, on SQLite and the local DynamoDB server: one signed delivery
//! per message; failures and timeouts retried with backoff under one idempotency key; a
//! crashed delivery taken over when its lease lapses; dead letters after too many failures,
//! listed and requeued; two dispatchers at once deliver once.

use std::sync::Arc;
use std::time::Duration;

use mcp_pipeline::FixedClock;
use outbox_format::{Message, Status};
use serde_json::json;

use crate::booking_tools::{confirm, draft, seeded_customer, seeded_technician, setup};
use crate::support::on_every_backend;
use crate::support::receiver::{Answer, Receiver};
use crate::world::World;

const SECRET: &[u8] = b"a webhook secret of at least 32 bytes";

/// Confirms a booking over MCP, which queues one message to its customer; returns its key.
pub(crate) async fn one_message(world: &World) -> store::Key {
    one_message_with_credentials(world).await.0
}

/// [`one_message`], also returning the credentials the caller used: its connection token and
/// the confirmation token.
async fn one_message_with_credentials(world: &World) -> (store::Key, [String; 2]) {
    let (c, token) = setup(world).await;
    let ada = seeded_customer(world, "acme", "Ada Lovelace", "ada@example.com").await;
    let tom = seeded_technician(world, "acme", "Tom Weber", "Europe/Berlin").await;
    let b = c
        .call_tool("create_booking", draft(&ada, &tom, "2055-06-07 09:00"))
        .await
        .structured()["booking"]
        .clone();
    let preview = c
        .call_tool(
            "send_booking_confirmation",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    assert!(!confirm(&c, &preview).await.is_error());
    let messages = acme_messages(world).await;
    assert_eq!(messages.len(), 1);
    let confirm_token = preview.structured()["confirm_token"].as_str().unwrap();
    (messages[0].key(), [token, confirm_token.to_owned()])
}

/// The messages acme's outbox holds.
pub(crate) async fn acme_messages(world: &World) -> Vec<Message> {
    let page = world
        .app
        .store
        .query(store::Query::partition("acme#outbox"))
        .await
        .unwrap();
    let read = page.items.iter().filter_map(|(k, i)| Message::read(k, i));
    read.collect()
}

pub(crate) async fn message(world: &World, key: &store::Key) -> Message {
    let item = world.app.store.get(key).await.unwrap().unwrap();
    Message::read(key, &item).unwrap()
}

async fn due_entries(world: &World) -> usize {
    world
        .app
        .store
        .query(store::Query::partition(outbox_format::keys::OUTBOX_DUE))
        .await
        .unwrap()
        .items
        .len()
}

fn dispatcher(
    world: &World,
    receiver: &Receiver,
    clock: &Arc<FixedClock>,
    deadline: Duration,
) -> outbox::Dispatcher {
    let webhook = outbox::Webhook::new(&receiver.url, SECRET, deadline, clock.clone()).unwrap();
    outbox::Dispatcher::new(world.app.store.clone(), Arc::new(webhook)).with_clock(clock.clone())
}

fn stream_insert(key: &store::Key) -> serde_json::Value {
    json!({"Records": [{"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": key.pk}, "sk": {"S": key.sk}}, "SequenceNumber": "1"}}]})
}

async fn a_message_reaches_the_receiver_once_signed(world: World) {
    let key = one_message(&world).await;
    let receiver = Receiver::start(vec![]).await;
    let clock = Arc::new(FixedClock::starting_now());
    let d = dispatcher(&world, &receiver, &clock, Duration::from_secs(5));
    let first = d.on_stream(&stream_insert(&key)).await;
    assert_eq!(first["batchItemFailures"], json!([]));
    // The stream repeats itself and the sweep runs: nothing more reaches the receiver.
    d.on_stream(&stream_insert(&key)).await;
    assert_eq!(d.sweep().await.unwrap(), outbox::Swept::default());
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    let m = message(&world, &key).await;
    assert_eq!(m.status, Status::Sent);
    assert_eq!(due_entries(&world).await, 0);
    let delivery = &got[0];
    assert_eq!(delivery.headers["idempotency-key"], m.idempotency_key());
    let body: serde_json::Value = serde_json::from_str(&delivery.body).unwrap();
    assert_eq!(body["to"], "ada@example.com");
    // The signature is the receiver's to check: HMAC over the timestamp and the body.
    assert!(delivery.is_signed_with(SECRET));
    assert!(!delivery.is_signed_with(b"another secret"));
}
on_every_backend!(signed_once, a_message_reaches_the_receiver_once_signed);

/// The delivery carries the webhook's own credential (its signature) and nothing of the
/// caller's (catalogue A02): no `Authorization` header, neither the connection token nor the
/// confirmation token, nor their digests.
async fn a_delivery_carries_nothing_of_the_callers_credentials(world: World) {
    use sha2::Digest as _;
    let (key, credentials) = one_message_with_credentials(&world).await;
    let receiver = Receiver::start(vec![]).await;
    let clock = Arc::new(FixedClock::starting_now());
    let d = dispatcher(&world, &receiver, &clock, Duration::from_secs(5));
    assert_eq!(
        d.on_stream(&stream_insert(&key)).await["batchItemFailures"],
        json!([])
    );
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    let delivery = &got[0];
    assert!(
        !delivery.headers.contains_key("authorization"),
        "{:?}",
        delivery.headers
    );
    let sent = format!("{:?} {}", delivery.headers, delivery.body);
    for credential in &credentials {
        let digest = sha2::Sha256::digest(credential.as_bytes());
        let digest: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        for secret in [credential.as_str(), &credential[4..], &digest] {
            assert!(
                !sent.contains(secret),
                "a credential left with the delivery: {sent}"
            );
        }
    }
}
on_every_backend!(
    credentials_stay,
    a_delivery_carries_nothing_of_the_callers_credentials
);

async fn failures_and_timeouts_are_retried_with_backoff(world: World) {
    let key = one_message(&world).await;
    let receiver = Receiver::start(vec![
        Answer::Status(503),
        Answer::Hang(Duration::from_secs(2)),
    ])
    .await;
    let clock = Arc::new(FixedClock::starting_now());
    let d = dispatcher(&world, &receiver, &clock, Duration::from_millis(300));
    assert_eq!(d.sweep().await.unwrap().retrying, 1, "the 503 is retried");
    let m = message(&world, &key).await;
    assert_eq!((m.status, m.attempts), (Status::Failed, 1));
    assert_eq!(
        d.sweep().await.unwrap().retrying,
        0,
        "not due for 30 seconds"
    );
    assert_eq!(receiver.received().len(), 1);
    clock.advance(31);
    assert_eq!(
        d.sweep().await.unwrap().retrying,
        1,
        "the timeout is retried"
    );
    clock.advance(31);
    assert_eq!(
        d.sweep().await.unwrap().delivered,
        0,
        "the wait doubled to 60 seconds"
    );
    clock.advance(30);
    assert_eq!(d.sweep().await.unwrap().delivered, 1);
    let got = receiver.received();
    assert_eq!(got.len(), 3);
    let expected = message(&world, &key).await.idempotency_key();
    assert!(got.iter().all(|r| r.headers["idempotency-key"] == expected));
    let attempts: Vec<&str> = got
        .iter()
        .map(|r| r.headers["gatehouse-attempt"].as_str())
        .collect();
    assert_eq!(attempts, ["1", "2", "3"]);
    assert_eq!(message(&world, &key).await.status, Status::Sent);
}
on_every_backend!(retries, failures_and_timeouts_are_retried_with_backoff);

async fn a_crashed_delivery_is_taken_over_when_its_lease_lapses(world: World) {
    let key = one_message(&world).await;
    let receiver = Receiver::start(vec![]).await;
    let clock = Arc::new(FixedClock::starting_now());
    let d = dispatcher(&world, &receiver, &clock, Duration::from_secs(5));
    // A delivery claims the message and dies before it sends.
    let now = mcp_pipeline::Clock::now(clock.as_ref());
    let crashed = outbox_format::claim(&key, "a-crashed-claim", now, now - 300);
    world.app.store.update(crashed).await.unwrap();
    assert_eq!(d.sweep().await.unwrap().skipped, 1, "its lease still holds");
    assert!(receiver.received().is_empty());
    clock.advance(301);
    assert_eq!(
        d.sweep().await.unwrap().delivered,
        1,
        "the lapsed lease is taken over"
    );
    assert_eq!(receiver.received().len(), 1);
    let delivered = message(&world, &key).await;
    assert_eq!(delivered.status, Status::Sent);
    // The lapsed owner comes back and records its own outcome: refused (its claim is no
    // longer the message's), and the taken-over result stands.
    let now = mcp_pipeline::Clock::now(clock.as_ref());
    for late in [
        outbox_format::sent(&delivered, "a-crashed-claim", now),
        outbox_format::failed(&delivered, "a-crashed-claim", Some(now + 60), "late"),
    ] {
        let refused = world.app.store.transact_write(late).await;
        assert!(
            matches!(refused, Err(store::StoreError::TransactionCancelled { .. })),
            "{refused:?}"
        );
    }
    let after = message(&world, &key).await;
    assert_eq!(
        (after.status, after.attempts),
        (Status::Sent, delivered.attempts)
    );
    assert_eq!(receiver.received().len(), 1, "delivered once");
}
on_every_backend!(
    lapsed_lease,
    a_crashed_delivery_is_taken_over_when_its_lease_lapses
);

async fn dead_letters_wait_for_an_operator(world: World) {
    let key = one_message(&world).await;
    let receiver = Receiver::start(vec![Answer::Status(500); 20]).await;
    let clock = Arc::new(FixedClock::starting_now());
    let policy = outbox::Policy {
        max_attempts: 3,
        first_retry_seconds: 10,
        ..outbox::Policy::default()
    };
    let d = dispatcher(&world, &receiver, &clock, Duration::from_secs(5)).with_policy(policy);
    let logs = crate::support::LogCapture::default();
    let _guard = logs.install();
    for _ in 0..3 {
        d.sweep().await.unwrap();
        clock.advance(3600);
    }
    let m = message(&world, &key).await;
    assert_eq!((m.status, m.attempts), (Status::Dead, 3));
    assert!(
        logs.lines()
            .iter()
            .any(|l| l.contains("outbox message dead-lettered")),
        "the alarm's log line: {:?}",
        logs.lines()
    );
    assert_eq!(
        d.sweep().await.unwrap(),
        outbox::Swept::default(),
        "dead letters wait"
    );
    let dead = d.dead_letters().await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        dead[0].last_error.as_deref(),
        Some("the receiver answered 500")
    );
    // One workspace's, read from its own messages (as at the edge): the same, and none of
    // another workspace's.
    let acme = d.dead_letters_of(&store::TenantId::new("acme")).await;
    assert_eq!(acme.unwrap(), dead);
    let globex = d.dead_letters_of(&store::TenantId::new("globex")).await;
    assert_eq!(globex.unwrap(), []);
    // The receiver is fixed; an operator requeues the message (audited) and it goes out.
    receiver.recover();
    let console = crate::support::cli_actor("acme", "ops");
    let ids = vec![m.id.clone()];
    let audit = identity::AuditEntry::by(&console, "outbox.retry", ids, &outside::SystemClock);
    let audit = audit.op(&outside::SystemRandomness);
    d.retry(&store::TenantId::new("acme"), &m.id, vec![audit])
        .await
        .unwrap();
    assert!(
        d.retry(&store::TenantId::new("acme"), &m.id, vec![])
            .await
            .is_err(),
        "only a dead letter is requeued"
    );
    assert_eq!(d.sweep().await.unwrap().delivered, 1);
    assert_eq!(message(&world, &key).await.status, Status::Sent);
    assert!(d.dead_letters().await.unwrap().is_empty());
    // A receiver that refuses a message for good (a 4xx) makes it dead at once.
    let refusing = Receiver::start(vec![Answer::Status(400)]).await;
    let second = one_message_more(&world).await;
    let d = dispatcher(&world, &refusing, &clock, Duration::from_secs(5));
    assert_eq!(d.sweep().await.unwrap().dead, 1);
    assert_eq!(message(&world, &second).await.status, Status::Dead);
}
on_every_backend!(dead_letters, dead_letters_wait_for_an_operator);

/// Cancels the confirmed booking, which queues a second message; returns its key.
async fn one_message_more(world: &World) -> store::Key {
    queue_one_more(world).await;
    let messages = acme_messages(world).await;
    let queued = messages.iter().find(|m| m.status == Status::Queued);
    queued.expect("a queued message").key()
}

/// After [`one_message`]: cancels the confirmed booking over MCP, which queues one more
/// message to its customer.
pub(crate) async fn queue_one_more(world: &World) {
    let (c, _) = setup(world).await;
    let found = c
        .call_tool("find_bookings", json!({"status": "confirmed"}))
        .await;
    let b = found.structured()["bookings"][0].clone();
    let preview = c
        .call_tool(
            "cancel_booking",
            json!({"booking": b["booking"], "version": b["version"]}),
        )
        .await;
    assert!(!confirm(&c, &preview).await.is_error());
}

async fn two_dispatchers_at_once_deliver_once(world: World) {
    let key = one_message(&world).await;
    let receiver = Receiver::start(vec![Answer::Hang(Duration::from_millis(200))]).await;
    let clock = Arc::new(FixedClock::starting_now());
    let stream = dispatcher(&world, &receiver, &clock, Duration::from_secs(5));
    let sweeper = dispatcher(&world, &receiver, &clock, Duration::from_secs(5));
    let event = stream_insert(&key);
    let (a, b) = tokio::join!(stream.on_stream(&event), sweeper.sweep());
    assert_eq!(a["batchItemFailures"], json!([]));
    b.unwrap();
    assert_eq!(receiver.received().len(), 1, "one delivery, not two");
    assert_eq!(message(&world, &key).await.status, Status::Sent);
}
on_every_backend!(concurrent, two_dispatchers_at_once_deliver_once);

/// The webhook's signing secret never shows in its `Debug` (what a log line would print).
#[test]
fn the_webhook_secret_is_not_in_its_debug_text() {
    let clock = std::sync::Arc::new(mcp_pipeline::SystemClock);
    let webhook = outbox::Webhook::new(
        "https://hooks.example.com/in",
        b"canary-webhook-secret",
        std::time::Duration::from_secs(1),
        clock,
    )
    .unwrap();
    let shown = format!("{webhook:?}");
    assert!(!shown.contains("canary-webhook-secret"), "{shown}");
    assert!(shown.contains("hooks.example.com"), "{shown}");
}

/// The receiver answered, then the store failed before the delivery was recorded (as if the
/// dispatcher died there): once the lease lapses the message is delivered again with the same
/// `Idempotency-Key`, so a receiver that honours it acts once; then it is recorded as sent.
async fn a_delivery_whose_record_was_lost_is_repeated_with_the_same_key(world: World) {
    use crate::support::faults::{Fault, FaultyStore, Op};
    let key = one_message(&world).await;
    let receiver = Receiver::start(vec![]).await;
    let clock = Arc::new(FixedClock::starting_now());
    let store = FaultyStore::new(world.app.store.clone());
    let webhook =
        outbox::Webhook::new(&receiver.url, SECRET, Duration::from_secs(5), clock.clone()).unwrap();
    let d = outbox::Dispatcher::new(store.clone(), Arc::new(webhook)).with_clock(clock.clone());
    let record = |c: &crate::support::faults::Call| c.op == Op::Transact && c.touches("outbox");
    store.on(record, Fault::Fail, 1);
    let _ = d.sweep().await;
    assert_eq!(
        store.faults_met(),
        1,
        "the record of the delivery never failed"
    );
    assert_eq!(receiver.received().len(), 1);
    assert_ne!(message(&world, &key).await.status, Status::Sent);
    clock.advance(outbox::Policy::default().lease_seconds + 1);
    d.sweep().await.unwrap();
    let got = receiver.received();
    assert_eq!(got.len(), 2, "delivered again after the lease");
    assert_eq!(
        got[0].headers["idempotency-key"],
        got[1].headers["idempotency-key"]
    );
    assert_eq!(message(&world, &key).await.status, Status::Sent);
    d.sweep().await.unwrap();
    assert_eq!(receiver.received().len(), 2, "and not a third time");
}
on_every_backend!(
    record_lost,
    a_delivery_whose_record_was_lost_is_repeated_with_the_same_key
);
