//! The issuer's keys fetched by URL (`GATEHOUSE_OAUTH_JWKS_URL`): cached for at most
//! `KEYS_MAX_AGE`, fetched again once for an unknown key id (one fetch for every caller
//! waiting, then a cool-down), a rotated key accepted and a removed one refused, old keys kept
//! while the endpoint is down. Through the real handler on SQLite, with the project's HTTP
//! client against a key endpoint on 127.0.0.1, and an injected clock.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::Algorithm;
use mcp_pipeline::{Clock as _, FixedClock};
use serde_json::{Value, json};

use crate::identity_contract::oauth_connection;
use crate::support::key_server::KeyServer;
use crate::support::store::Backend;
use crate::support::tokens::{key_set, sign};
use crate::world::{ISSUER, RESOURCE, World};

const RSA: &str = "test-rs256";
const EC: &str = "test-es256";

/// A world whose OAuth keys come from `server`, on `clock`.
async fn world(server: &KeyServer, clock: &Arc<FixedClock>) -> World {
    let plan = app::settings::OAuthPlan {
        config: identity::oauth::OAuthConfig {
            issuer: ISSUER.into(),
            audience: RESOURCE.into(),
            tenant_claim: "tenant".into(),
            accept_untyped: false,
        },
        keys: app::settings::KeysFrom::Url(server.url.clone()),
    };
    let settings = app::Settings {
        oauth: Some(plan.into_oauth(app::key_set_url::fetcher)),
        clock: Arc::clone(clock) as Arc<dyn mcp_pipeline::Clock>,
        ..app::Settings::default()
    };
    let world = World::with_settings(Backend::Sqlite, settings)
        .await
        .expect("SQLite is always there");
    world.member("acme", "olga", "owner").await;
    oauth_connection(&world, "acme", "olga", "user-olga").await;
    world
}

/// A token for olga signed with the test key `kid` names (valid two hours from `clock`'s now).
fn token(clock: &FixedClock, alg: Algorithm, kid: &str) -> String {
    let now = clock.now();
    let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "user-olga", "tenant": "acme",
        "iat": now, "exp": now + 7200});
    sign(alg, kid, &claims)
}

async fn status(world: &World, token: &str) -> u16 {
    world
        .client(token)
        .request("tools/list", json!({}))
        .await
        .status
}

async fn statuses(world: &World, tokens: Vec<String>) -> Vec<u16> {
    let calls = tokens.iter().map(|t| status(world, t));
    futures_util::future::join_all(calls).await
}

fn rsa_only() -> Value {
    key_set(&[RSA])
}

#[tokio::test]
async fn keys_by_url_are_cached_rotated_keys_taken_and_removed_ones_refused() {
    let server = KeyServer::start(&rsa_only(), Duration::ZERO).await;
    let clock = Arc::new(FixedClock::starting_now());
    let world = world(&server, &clock).await;
    let rsa = token(&clock, Algorithm::RS256, RSA);
    assert_eq!(status(&world, &rsa).await, 200);
    assert_eq!(status(&world, &rsa).await, 200);
    assert_eq!(server.requests(), 1, "the second call used the cached keys");

    // The issuer rotates to its EC key and drops the RSA one. Within the cool-down of the
    // last fetch the new key id is not fetched for; after it, once.
    server.serve(&key_set(&[EC]));
    let cool_down = identity::oauth::REFRESH_COOL_DOWN.as_secs() as i64;
    assert_eq!(
        status(&world, &token(&clock, Algorithm::ES256, EC)).await,
        401
    );
    assert_eq!(server.requests(), 1);
    clock.advance(cool_down + 1);
    assert_eq!(
        status(&world, &token(&clock, Algorithm::ES256, EC)).await,
        200
    );
    assert_eq!(
        server.requests(),
        2,
        "the unknown key id fetched the keys once"
    );
    assert_eq!(
        status(&world, &rsa).await,
        401,
        "the removed key is refused"
    );
    assert_eq!(
        server.requests(),
        2,
        "within the cool-down nothing is fetched"
    );

    // Forged key ids cannot make gatehouse hammer the issuer.
    let forged: Vec<String> = (0..20)
        .map(|i| token(&clock, Algorithm::RS256, &format!("forged-{i}")))
        .collect();
    assert!(
        statuses(&world, forged.clone())
            .await
            .iter()
            .all(|s| *s == 401)
    );
    assert_eq!(server.requests(), 2);
    clock.advance(cool_down + 1);
    assert!(statuses(&world, forged).await.iter().all(|s| *s == 401));
    assert_eq!(
        server.requests(),
        3,
        "after the cool-down, one fetch for all of them"
    );

    // Past the maximum age the keys are fetched again, even for a known key id.
    let max_age = identity::oauth::KEYS_MAX_AGE.as_secs() as i64;
    clock.advance(max_age + 1);
    let ec = token(&clock, Algorithm::ES256, EC);
    assert_eq!(status(&world, &ec).await, 200);
    assert_eq!(server.requests(), 4);

    // The endpoint goes down: the keys held stay in use, and are asked for again later.
    server.fail(503);
    clock.advance(max_age + 1);
    assert_eq!(
        status(&world, &ec).await,
        200,
        "old keys kept through an outage"
    );
    assert_eq!(server.requests(), 5);
}

#[tokio::test]
async fn one_fetch_serves_every_caller_waiting_for_the_first_keys() {
    let server = KeyServer::start(&rsa_only(), Duration::from_millis(300)).await;
    let clock = Arc::new(FixedClock::starting_now());
    let world = world(&server, &clock).await;
    let tokens = vec![token(&clock, Algorithm::RS256, RSA); 16];
    assert_eq!(statuses(&world, tokens).await, vec![200; 16]);
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn without_keys_the_endpoint_is_unavailable_and_the_fetch_retried_after_a_pause() {
    let server = KeyServer::start(&rsa_only(), Duration::ZERO).await;
    server.fail(500);
    let clock = Arc::new(FixedClock::starting_now());
    let world = world(&server, &clock).await;
    let rsa = token(&clock, Algorithm::RS256, RSA);
    // Nothing can be checked without keys: an outage (503 with Retry-After), not a bad token.
    let answer = world.client(&rsa).request("tools/list", json!({})).await;
    assert_eq!(answer.status, 503);
    assert!(answer.header("retry-after").is_some());
    assert_eq!(status(&world, &rsa).await, 503);
    assert_eq!(
        server.requests(),
        1,
        "a failed first fetch is not retried at once"
    );

    server.serve(&rsa_only());
    clock.advance(identity::oauth::FIRST_FETCH_RETRY.as_secs() as i64 + 1);
    assert_eq!(status(&world, &rsa).await, 200);
    assert_eq!(server.requests(), 2);
}

/// Outbound requests carry none of the inbound credential (catalogue A02): the key fetches a
/// valid token and a forged key id cause send no `Authorization` header and no part of either
/// token.
#[tokio::test]
async fn a_key_fetch_carries_nothing_of_the_callers_credential() {
    let server = KeyServer::start(&rsa_only(), Duration::ZERO).await;
    let clock = Arc::new(FixedClock::starting_now());
    let world = world(&server, &clock).await;
    let valid = token(&clock, Algorithm::RS256, RSA);
    assert_eq!(status(&world, &valid).await, 200);
    clock.advance(identity::oauth::REFRESH_COOL_DOWN.as_secs() as i64 + 1);
    let forged = token(&clock, Algorithm::RS256, "forged-kid");
    assert_eq!(status(&world, &forged).await, 401);
    let heads = server.heads();
    assert_eq!(heads.len(), 2, "one fetch each: {heads:?}");
    for head in &heads {
        let lower = head.to_ascii_lowercase();
        assert!(!lower.contains("authorization"), "{head}");
        for credential in [&valid, &forged] {
            for part in credential.split('.') {
                assert!(!head.contains(part), "a part of the token left: {head}");
            }
        }
    }
}

/// A caller that goes away while its unknown key id is being fetched for (a client that
/// disconnects, or one that does so on purpose every cool-down) does not hold the refresh back:
/// the fetch it started is finished by the next caller that needs it, and the issuer is not
/// asked twice.
#[tokio::test]
async fn a_caller_gone_mid_fetch_does_not_hold_back_the_refresh() {
    let server = KeyServer::start(&rsa_only(), Duration::from_millis(400)).await;
    let clock = Arc::new(FixedClock::starting_now());
    let world = world(&server, &clock).await;
    assert_eq!(
        status(&world, &token(&clock, Algorithm::RS256, RSA)).await,
        200
    );
    server.serve(&key_set(&[EC]));
    clock.advance(identity::oauth::REFRESH_COOL_DOWN.as_secs() as i64 + 1);
    let ec = token(&clock, Algorithm::ES256, EC);
    let gone = tokio::time::timeout(Duration::from_millis(100), status(&world, &ec)).await;
    assert!(gone.is_err(), "the first caller left before the keys came");
    assert_eq!(server.requests(), 2, "its fetch reached the issuer");
    assert_eq!(
        status(&world, &ec).await,
        200,
        "the next caller got the new key"
    );
    assert_eq!(server.requests(), 2, "the issuer was asked once");
}
