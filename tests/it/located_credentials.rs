//! A member's sign-in session and product API tokens are kept in their workspace and name it
//! (ADR 53): after signing in, the pages and the JSON API ask that workspace alone (at the
//! edge, its object alone), and a session or token made before still works from the
//! deployment's partition until it ends.

use crate::support::on_every_backend;
use crate::support::places::{NotedWorld, noted_world};
use crate::web::{send, sign_in};

/// The pages a signed-in owner opens, and the JSON API with a token, ask the workspace alone.
async fn a_members_requests_reach_only_their_workspace(NotedWorld { world, noted }: NotedWorld) {
    world.member("acme", "ana", "owner").await;
    world.member("globex", "gil", "owner").await;
    let (cookie, _csrf) = sign_in(&world, "acme", "ana").await;
    let id = cookie
        .strip_prefix("gh_session=")
        .expect("the session cookie");
    let named = identity::token::session_locator(id).expect("the cookie names its workspace");
    assert_eq!(
        (named.tenant.as_str(), named.member.as_str()),
        ("acme", "ana")
    );
    let token = crate::support::api_token(&world.app, "acme", "ana")
        .await
        .unwrap();
    assert!(identity::token::api_locator(&token).is_some(), "{token}");
    noted.take();

    for path in [
        "/app/",
        "/app/connections",
        "/app/agent-access",
        "/app/activity",
        "/app/approvals",
    ] {
        let page = send(&world, "GET", path, &[("cookie", &cookie)], "").await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert_eq!(noted.global_since(), Vec::<String>::new(), "{path}");
    }
    let bearer = format!("Bearer {token}");
    let listed = send(
        &world,
        "GET",
        "/api/customers",
        &[("authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(noted.global_since(), Vec::<String>::new(), "the JSON API");

    // And they find nothing in another workspace: a cookie or token whose locator is changed
    // to another workspace is an unknown one (the hash covers the whole text).
    let moved = moved_to_globex(id, "");
    let page = send(
        &world,
        "GET",
        "/app/",
        &[("cookie", &format!("gh_session={moved}"))],
        "",
    )
    .await;
    assert_ne!(
        page.status, 200,
        "a cookie moved to another workspace opened its pages"
    );
    assert_eq!(noted.workspaces_since(), vec!["globex".to_owned()]);
    let moved = moved_to_globex(&token, "gha_");
    let refused = send(
        &world,
        "GET",
        "/api/customers",
        &[("authorization", &format!("Bearer {moved}"))],
        "",
    )
    .await;
    assert_eq!(refused.status, 401, "{}", refused.body);
}
on_every_backend!(
    requests_in_their_workspace,
    a_members_requests_reach_only_their_workspace,
    |backend| noted_world(backend),
    threads = 2
);

/// A session and an API token made before ADR 53 (no locator, their items in the deployment's
/// partition) still work until they end; the token's revocation removes its item there.
async fn credentials_made_before_keep_working_where_they_are(
    NotedWorld { world, noted }: NotedWorld,
) {
    world.member("acme", "ana", "owner").await;
    let (cookie, csrf) = sign_in(&world, "acme", "ana").await;
    let id = cookie.strip_prefix("gh_session=").unwrap();
    let store = world.app.store.clone();
    let (old_id, old_hash) = ("s".repeat(43), identity::token::hash(&"s".repeat(43)));
    let session =
        accounts::keys::session(&store::TenantId::new("acme"), &identity::token::hash(id));
    let item = store
        .get(&session)
        .await
        .unwrap()
        .expect("the session item");
    put_at(
        store.as_ref(),
        accounts::keys::global_session(&old_hash),
        item,
    )
    .await;
    let old_cookie = format!("gh_session={old_id}");
    let page = send(&world, "GET", "/app/", &[("cookie", &old_cookie)], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!noted.global_since().is_empty(), "read where it was kept");
    let headers = [("cookie", old_cookie.as_str()), crate::web::FORM];
    let out = send(
        &world,
        "POST",
        "/app/logout",
        &headers,
        &format!("csrf={csrf}"),
    )
    .await;
    assert!(out.status < 400, "{}", out.body);
    let global = accounts::keys::global_session(&old_hash);
    assert_eq!(
        store.get(&global).await.unwrap(),
        None,
        "signing out ends it"
    );

    // A token whose index item is where tokens were kept before, found by its hash alone.
    let ana = crate::support::cli_actor("acme", "ana");
    let (made, secret) = world.app.api_tokens.create(&ana, None).await.unwrap();
    let tenant = store::TenantId::new("acme");
    let index = accounts::keys::api_token(&tenant, &identity::token::hash(&secret));
    let item = store.get(&index).await.unwrap().expect("the index item");
    store.delete(store::Delete::new(index)).await.unwrap();
    let old = format!("gha_{}", "t".repeat(43));
    let old_index = accounts::keys::legacy_api_token(&identity::token::hash(&old));
    put_at(store.as_ref(), old_index.clone(), item).await;
    let record = accounts::keys::api_token_record(&tenant, &made.id);
    let mut as_before = store.get(&record).await.unwrap().expect("the record");
    as_before.remove("located");
    as_before.insert("hash".into(), store::Value::s(identity::token::hash(&old)));
    store.put(store::Put::new(record, as_before)).await.unwrap();
    let bearer = format!("Bearer {old}");
    let headers = [("authorization", bearer.as_str())];
    let api = || send(&world, "GET", "/api/customers", &headers, "");
    assert_eq!(api().await.status, 200);
    world.app.api_tokens.revoke(&ana, &made.id).await.unwrap();
    assert_eq!(
        store.get(&old_index).await.unwrap(),
        None,
        "revoked where it was kept"
    );
    assert_eq!(api().await.status, 401);
}
on_every_backend!(
    credentials_made_before,
    credentials_made_before_keep_working_where_they_are,
    |backend| noted_world(backend),
    threads = 2
);

async fn put_at(store: &dyn store::Store, key: store::Key, item: store::Item) {
    store.put(store::Put::new(key, item)).await.unwrap();
}

/// `text` (`prefix`, locator, `.`, secret) with its locator changed to name globex's gil.
fn moved_to_globex(text: &str, prefix: &str) -> String {
    let secret = text.rsplit_once('.').expect("a located text").1;
    let globex = identity::token::generate_api(
        &identity::token::MemberLocator {
            tenant: store::TenantId::new("globex"),
            member: store::MemberId::new("gil"),
        },
        &outside::SystemRandomness,
    );
    let locator = globex
        .secret
        .strip_prefix("gha_")
        .unwrap()
        .split_once('.')
        .unwrap()
        .0;
    format!("{prefix}{locator}.{secret}")
}
