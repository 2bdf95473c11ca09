//! The workspace's HTTP client trying again: by its policy on 429 and 5xx, a server's
//! `Retry-After` taking the place of the computed wait (capped), the last answer returned when
//! every try was refused. Against a receiver on 127.0.0.1.

use std::time::{Duration, Instant};

use http_client::{HttpClient, RetryPolicy};

use crate::support::receiver::{Answer, Receiver};

const QUICK: RetryPolicy = RetryPolicy {
    retries: 3,
    first_wait: Duration::from_millis(10),
    longest_wait: Duration::from_secs(5),
};

async fn post(receiver: &Receiver, policy: RetryPolicy) -> (u16, Duration) {
    let client = HttpClient::new(Duration::from_secs(5)).unwrap();
    let started = Instant::now();
    let answer = client
        .send_with_retries(http::Method::POST, &receiver.url, &[], "{}".into(), policy)
        .await
        .expect("answered");
    (answer.status, started.elapsed())
}

#[tokio::test]
async fn a_busy_server_is_tried_again_after_the_wait_it_asks_for() {
    let receiver = Receiver::start(vec![Answer::Busy(429, 1), Answer::Status(503)]).await;
    let (status, took) = post(&receiver, QUICK).await;
    assert_eq!(status, 200);
    assert_eq!(receiver.received().len(), 3);
    // The computed waits are 10 and 20 ms; the server asked for a whole second once.
    assert!(took >= Duration::from_secs(1), "took {took:?}");
}

#[tokio::test]
async fn a_server_asking_for_an_hour_waits_only_the_longest_wait() {
    let receiver = Receiver::start(vec![Answer::Busy(503, 3600)]).await;
    let policy = RetryPolicy {
        longest_wait: Duration::from_millis(50),
        ..QUICK
    };
    let (status, took) = post(&receiver, policy).await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[tokio::test]
async fn every_try_refused_returns_the_last_answer_after_the_retries() {
    let receiver = Receiver::start(vec![Answer::Status(500); 10]).await;
    let (status, _) = post(&receiver, QUICK).await;
    assert_eq!(status, 500);
    assert_eq!(receiver.received().len(), 1 + QUICK.retries);
}

#[tokio::test]
async fn a_refusal_that_is_not_busy_is_not_tried_again() {
    let receiver = Receiver::start(vec![Answer::Status(400)]).await;
    let (status, _) = post(&receiver, QUICK).await;
    assert_eq!(status, 400);
    assert_eq!(receiver.received().len(), 1);
}
