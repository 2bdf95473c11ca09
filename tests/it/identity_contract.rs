//! Who is calling: credentials, tenant binding, live rights, kill switch and audit, through
//! the real handler on SQLite and on the local DynamoDB server.

use base64::Engine as _;
use identity::{Actor, AuditEntry, Channel, NewConnection};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_pipeline::Toolset;
use serde_json::{Value, json};

use crate::support::key_server::KeyServer;
use crate::support::on_every_backend;
use crate::support::tokens::{sign, sign_with};

/// The real test RSA public key under the key id `elsewhere`.
fn elsewhere_keys() -> Value {
    let mut keys = crate::support::tokens::key_set(&["test-rs256"]);
    keys["keys"][0]["kid"] = json!("elsewhere");
    keys
}
use crate::world::{ISSUER, RESOURCE, World};

fn now() -> i64 {
    mcp_pipeline::Clock::now(&mcp_pipeline::SystemClock)
}

pub(crate) fn claims(tenant: &str, sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "sub": sub, "tenant": tenant, "exp": now() + 600, "iat": now()})
}

fn b64(value: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
}

/// A token with `alg: none` and no signature.
fn unsigned(claims: &Value) -> String {
    format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(claims)
    )
}

/// HS256 "signed" with the RSA public key as the secret: the classic key-confusion attack.
fn hs256_with_public_key(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("test-rs256".into());
    let key = EncodingKey::from_secret(include_bytes!("../fixtures/oauth/rs256-public.pem"));
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

async fn setup(world: &World) -> String {
    world.member("acme", "ana", "owner").await;
    world.connect("acme", "ana", Toolset::Full).await.1
}

pub(crate) async fn oauth_connection(world: &World, tenant: &str, member: &str, subject: &str) {
    use identity::Directory as _;
    let rights = world
        .app
        .directory
        .member(&store::TenantId::new(tenant), &store::MemberId::new(member))
        .await
        .unwrap()
        .unwrap()
        .rights;
    let actor = Actor {
        tenant: store::TenantId::new(tenant),
        member: store::MemberId::new(member),
        channel: Channel::Cli,
    };
    world
        .app
        .connections
        .create_oauth(
            &actor,
            subject,
            NewConnection {
                rights,
                toolset: Toolset::Full,
                client_name: "oauth client".into(),
                approval: mcp_pipeline::ApprovalMode::Client,
            },
        )
        .await
        .unwrap();
}

async fn status_of(
    world: &World,
    authorization: Option<&str>,
    extra: &[(&str, &str)],
) -> mcp_test_client::RawResponse {
    let mut client = world.anonymous();
    if let Some(a) = authorization {
        client = client.with_header("authorization", a);
    }
    for (k, v) in extra {
        client = client.with_header(k, v);
    }
    client.request("tools/list", json!({})).await
}

pub(crate) async fn credentials_that_must_fail_get_401(world: World) {
    let mcp_token = setup(&world).await;
    world.member("acme", "olga", "owner").await;
    oauth_connection(&world, "acme", "olga", "user-olga").await;
    let mut wrong_audience = claims("acme", "user-olga");
    wrong_audience["aud"] = json!("https://other.example.com/mcp");
    let mut no_issuer = claims("acme", "user-olga");
    no_issuer.as_object_mut().unwrap().remove("iss");
    let mut wrong_issuer = claims("acme", "user-olga");
    wrong_issuer["iss"] = json!("https://evil.example.com");
    let mut expired = claims("acme", "user-olga");
    expired["exp"] = json!(now() - 3600);
    let mut string_exp = claims("acme", "user-olga");
    string_exp["exp"] = json!((now() + 600).to_string());
    let mut no_exp = claims("acme", "user-olga");
    no_exp.as_object_mut().unwrap().remove("exp");
    // The leeway is 30 s either way (identity::oauth::LEEWAY_SECONDS); 40 s is past it.
    let mut past_leeway = claims("acme", "user-olga");
    past_leeway["exp"] = json!(now() - 40);
    let mut not_yet = claims("acme", "user-olga");
    not_yet["nbf"] = json!(now() + 40);
    let mut no_audience = claims("acme", "user-olga");
    no_audience.as_object_mut().unwrap().remove("aud");
    let mut string_nbf = claims("acme", "user-olga");
    string_nbf["nbf"] = json!("99999999999");
    // Keys the token itself points at are never fetched nor trusted: the key server serves
    // the real public key under the token's key id, so following `jku` would accept it.
    let elsewhere = KeyServer::start(&elsewhere_keys(), std::time::Duration::ZERO).await;
    let mut pointing = Header::new(Algorithm::RS256);
    pointing.typ = Some("at+jwt".into());
    pointing.kid = Some("elsewhere".into());
    pointing.jku = Some(elsewhere.url.clone());
    pointing.x5u = Some(elsewhere.url.clone());
    let mut embedding = Header::new(Algorithm::RS256);
    embedding.typ = Some("at+jwt".into());
    embedding.kid = Some("elsewhere".into());
    // Typed JWT, not as an access token (RFC 9068): an ID token or any other JWT the issuer
    // signs is not a credential here (ADR 48).
    let mut plain_jwt = Header::new(Algorithm::RS256);
    plain_jwt.kid = Some("test-rs256".into());
    embedding.jwk = Some(serde_json::from_value(elsewhere_keys()["keys"][0].clone()).unwrap());
    let bearer = |t: String| Some(format!("Bearer {t}"));
    type Case<'a> = (&'a str, Option<String>, Vec<(&'a str, &'a str)>);
    let cases: Vec<Case<'_>> = vec![
        ("no credential", None, vec![]),
        (
            "product API token",
            Some("Bearer gha_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG".into()),
            vec![],
        ),
        (
            "session cookie",
            None,
            vec![("cookie", "gh_session=s3ss10n; theme=dark")],
        ),
        (
            "unknown MCP token",
            Some("Bearer ghm_notARealTokenAtAll0000000000000000000000000".into()),
            vec![],
        ),
        ("not bearer", Some("Basic YW5hOnNlY3JldA==".into()), vec![]),
        (
            "JWT for another audience",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &wrong_audience)
            )),
            vec![],
        ),
        (
            "JWT without issuer",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &no_issuer)
            )),
            vec![],
        ),
        (
            "JWT from another issuer",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::ES256, "test-es256", &wrong_issuer)
            )),
            vec![],
        ),
        (
            "JWT alg none",
            Some(format!("Bearer {}", unsigned(&claims("acme", "user-olga")))),
            vec![],
        ),
        (
            "JWT HS256 signed with the public key",
            Some(format!(
                "Bearer {}",
                hs256_with_public_key(&claims("acme", "user-olga"))
            )),
            vec![],
        ),
        (
            "JWT expired",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &expired)
            )),
            vec![],
        ),
        (
            "JWT expired past the leeway",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &past_leeway)
            )),
            vec![],
        ),
        (
            "JWT not valid yet",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &not_yet)
            )),
            vec![],
        ),
        (
            "JWT with a string exp",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &string_exp)
            )),
            vec![],
        ),
        (
            "JWT without exp",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &no_exp)
            )),
            vec![],
        ),
        (
            "JWT with an unknown key id",
            Some(format!(
                "Bearer {}",
                sign(
                    Algorithm::RS256,
                    "rotated-away",
                    &claims("acme", "user-olga")
                )
            )),
            vec![],
        ),
        (
            "JWT RS512 (only RS256 and ES256 are accepted)",
            bearer(sign(
                Algorithm::RS512,
                "test-rs256",
                &claims("acme", "user-olga"),
            )),
            vec![],
        ),
        (
            "JWT without audience",
            bearer(sign(Algorithm::RS256, "test-rs256", &no_audience)),
            vec![],
        ),
        (
            "JWT with a string nbf",
            bearer(sign(Algorithm::RS256, "test-rs256", &string_nbf)),
            vec![],
        ),
        (
            "JWT naming its own key set (jku, x5u)",
            bearer(sign_with(pointing, &claims("acme", "user-olga"))),
            vec![],
        ),
        (
            "JWT carrying its own key (jwk)",
            bearer(sign_with(embedding, &claims("acme", "user-olga"))),
            vec![],
        ),
        (
            "JWT typed JWT, not at+jwt",
            bearer(sign_with(plain_jwt, &claims("acme", "user-olga"))),
            vec![],
        ),
        (
            "JWT signed ES256 under a key published for RS256",
            bearer(sign(
                Algorithm::ES256,
                "test-rs256",
                &claims("acme", "user-olga"),
            )),
            vec![],
        ),
        (
            "JWT of a subject without connection",
            Some(format!(
                "Bearer {}",
                sign(Algorithm::RS256, "test-rs256", &claims("acme", "stranger"))
            )),
            vec![],
        ),
    ];
    for (what, authorization, extra) in cases {
        let r = status_of(&world, authorization.as_deref(), &extra).await;
        assert_eq!(
            r.status,
            401,
            "{what}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
        let challenge = r
            .header("www-authenticate")
            .unwrap_or_else(|| panic!("{what}: no WWW-Authenticate"));
        assert!(
            challenge.starts_with("Bearer ") && challenge.contains("resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""),
            "{what}: {challenge}"
        );
        assert!(
            !String::from_utf8_lossy(&r.body).contains("ghm_"),
            "{what}: the body echoes a credential"
        );
        assert_eq!(r.header("cache-control"), Some("no-store"), "{what}");
    }
    assert_eq!(
        elsewhere.requests(),
        0,
        "a key set a token named was fetched"
    );
    // A valid token in the query string is not a credential (it would end up in logs).
    let anonymous = world.anonymous();
    let (body, headers) = anonymous.build("tools/list", json!({}));
    let path = format!("/mcp?access_token={mcp_token}");
    let r = anonymous
        .send(http::Method::POST, &path, &headers, body.to_string().into())
        .await;
    assert_eq!(r.status, 401, "a token in the query string");
    // Within the leeway at both ends: expired 20 s ago, valid from 20 s ahead.
    let mut within = claims("acme", "user-olga");
    within["exp"] = json!(now() - 20);
    within["nbf"] = json!(now() + 20);
    let token = sign(Algorithm::RS256, "test-rs256", &within);
    let r = status_of(&world, Some(&format!("Bearer {token}")), &[]).await;
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    // The valid pairings work: RS256 and ES256 tokens for this audience.
    for (alg, kid) in [
        (Algorithm::RS256, "test-rs256"),
        (Algorithm::ES256, "test-es256"),
    ] {
        let token = sign(alg, kid, &claims("acme", "user-olga"));
        let r = status_of(&world, Some(&format!("Bearer {token}")), &[]).await;
        assert_eq!(
            r.status,
            200,
            "{alg:?}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
    }
}
on_every_backend!(
    credentials_that_must_fail,
    credentials_that_must_fail_get_401
);

pub(crate) async fn protected_resource_metadata_is_served(world: World) {
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = world
            .anonymous()
            .send(http::Method::GET, path, &[], bytes::Bytes::new())
            .await;
        assert_eq!(r.status, 200, "{path}");
        let doc = r.json();
        assert_eq!(doc["resource"], RESOURCE);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }
}
on_every_backend!(
    protected_resource_metadata,
    protected_resource_metadata_is_served
);

async fn bad_origin_gets_403_before_authentication(world: World) {
    let token = setup(&world).await;
    let r = status_of(&world, None, &[("origin", "https://evil.example")]).await;
    assert_eq!(
        r.status, 403,
        "no credential, bad Origin: Origin is checked first"
    );
    let r = status_of(
        &world,
        Some(&format!("Bearer {token}")),
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(r.status, 403);
    let r = status_of(
        &world,
        Some(&format!("Bearer {token}")),
        &[("origin", "https://app.example.com")],
    )
    .await;
    assert_eq!(r.status, 200);
}
on_every_backend!(bad_origin, bad_origin_gets_403_before_authentication);

pub(crate) async fn the_tenant_comes_from_the_credential_only(world: World) {
    let token = setup(&world).await;
    world.member("globex", "gus", "owner").await;
    let client = world.client(&token);
    // No tool takes a tenant, so naming one is an unknown argument with the allowed list.
    for field in ["tenant_id", "workspace_id", "tenant"] {
        let call = client
            .call_tool("list_recent_changes", json!({field: "globex"}))
            .await;
        assert!(call.is_error(), "{field}");
        assert_eq!(call.structured()["code"], "validation");
        assert_eq!(call.structured()["unknown"], json!([field]));
        assert_eq!(call.structured()["allowed"], json!(["scope", "limit"]));
    }
    let list = client.list_tools().await;
    for tool in list["tools"].as_array().unwrap() {
        let props = tool["inputSchema"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            !props
                .keys()
                .any(|k| k.contains("tenant") || k.contains("workspace")),
            "{}",
            tool["name"]
        );
    }
    // A path naming another tenant than the credential's is refused; the right one passes.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let hs = |auth: &str| {
        vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("authorization".to_owned(), auth.to_owned()),
        ]
    };
    let auth = format!("Bearer {token}");
    let r = world
        .anonymous()
        .send(
            http::Method::POST,
            "/t/globex/mcp",
            &hs(&auth),
            body.to_string().into(),
        )
        .await;
    assert_eq!(r.status, 403);
    let r = world
        .anonymous()
        .send(
            http::Method::POST,
            "/t/acme/mcp",
            &hs(&auth),
            body.to_string().into(),
        )
        .await;
    assert_eq!(r.status, 200);
}
on_every_backend!(tenant_binding, the_tenant_comes_from_the_credential_only);

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn rights_are_cut_live_on_every_call(world: World) {
    world.member("acme", "dan", "dispatcher").await;
    let (_, token) = world.connect("acme", "dan", Toolset::Full).await;
    let client = world.client(&token);
    assert!(names(&client.list_tools().await).contains(&"list_recent_changes".to_owned()));
    assert!(
        !client
            .call_tool("list_recent_changes", json!({}))
            .await
            .is_error()
    );
    // Role changed to one without the product's read right: the next call sees it.
    world.member("acme", "dan", "guest").await;
    let list = client.list_tools().await;
    assert_eq!(
        names(&list),
        ["get_server_status"],
        "tools/list shrinks with the creator's rights"
    );
    let call = client.call_tool("list_recent_changes", json!({})).await;
    assert!(call.is_error());
    assert_eq!(call.structured()["hidden_by"], "rights");
    assert_eq!(
        call.structured()["missing_rights"],
        json!(["bookings:read"])
    );
    assert!(
        call.text()
            .starts_with("Error: The tool list_recent_changes needs the right bookings:read"),
        "{}",
        call.text()
    );
    // Role restored, then the member deactivated: the connection ends on the next call.
    world.member("acme", "dan", "dispatcher").await;
    assert_eq!(client.request("tools/list", json!({})).await.status, 200);
    world.deactivate("acme", "dan", "dispatcher").await;
    assert_eq!(client.request("tools/list", json!({})).await.status, 401);
    // Removed entirely: still refused.
    world
        .app
        .store
        .delete(store::Delete::new(identity::keys::member(
            &store::TenantId::new("acme"),
            &store::MemberId::new("dan"),
        )))
        .await
        .unwrap();
    assert_eq!(client.request("tools/list", json!({})).await.status, 401);
}
on_every_backend!(live_rights, rights_are_cut_live_on_every_call);

async fn toolsets_bound_to_the_connection(world: World) {
    world.member("acme", "ana", "owner").await;
    let (_, core) = world.connect("acme", "ana", Toolset::Core).await;
    let list = world.client(&core).list_tools().await;
    let core = names(&list);
    assert!(
        core.contains(&"find_customers".to_owned())
            && core.contains(&"send_booking_confirmation".to_owned()),
        "{core:?}"
    );
    assert!(
        !core.contains(&"delete_customer".to_owned())
            && !core.contains(&"cancel_booking".to_owned()),
        "delete and cancel are not core: {core:?}"
    );
    let (_, full) = world.connect("acme", "ana", Toolset::Full).await;
    let list = world.client(&full).list_tools().await;
    assert!(
        names(&list).contains(&"delete_customer".to_owned())
            && names(&list).contains(&"confirm_action".to_owned())
    );
}
on_every_backend!(toolsets, toolsets_bound_to_the_connection);

async fn connections_are_capped_hashed_and_revocable(world: World) {
    world.member("acme", "dan", "dispatcher").await;
    let actor = Actor {
        tenant: store::TenantId::new("acme"),
        member: store::MemberId::new("dan"),
        channel: Channel::Cli,
    };
    let too_much = NewConnection {
        rights: ["bookings:read".into(), "records:delete".into()].into(),
        toolset: Toolset::Core,
        client_name: "x".into(),
        approval: mcp_pipeline::ApprovalMode::Client,
    };
    let err = world
        .app
        .connections
        .create_token(&actor, too_much)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("records:delete"), "{err}");
    world.member("acme", "vic", "viewer").await;
    let viewer = Actor {
        tenant: store::TenantId::new("acme"),
        member: store::MemberId::new("vic"),
        channel: Channel::Cli,
    };
    let ok = NewConnection {
        rights: ["bookings:read".into()].into(),
        toolset: Toolset::Core,
        client_name: "x".into(),
        approval: mcp_pipeline::ApprovalMode::Client,
    };
    assert!(
        world
            .app
            .connections
            .create_token(&viewer, ok.clone())
            .await
            .is_err(),
        "viewers may not create connections"
    );
    let (connection, token) = world
        .app
        .connections
        .create_token(&actor, ok)
        .await
        .unwrap();
    assert!(token.starts_with("ghm_"));
    assert_eq!(connection.rights.len(), 1);
    // The token is stored nowhere in clear; its hash is.
    let listed = world
        .app
        .connections
        .list(&store::TenantId::new("acme"))
        .await
        .unwrap();
    assert!(listed.iter().any(|c| c.id == connection.id));
    let hash = identity::token::hash(&token);
    let index = world
        .app
        .store
        .get(&identity::keys::mcp_token(
            &store::TenantId::new("acme"),
            &hash,
        ))
        .await
        .unwrap()
        .expect("index by hash");
    assert!(!store::item_to_json(&index).contains(&token));
    if world.backend == crate::support::store::Backend::Sqlite {
        let file = world.app.store.as_ref();
        let path = format!("{file:?}");
        let db = path
            .split("path: \"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .expect("sqlite path in Debug");
        let mut bytes = std::fs::read(db).unwrap();
        if let Ok(wal) = std::fs::read(format!("{db}-wal")) {
            bytes.extend(wal);
        }
        let haystack = String::from_utf8_lossy(&bytes);
        assert!(
            !haystack.contains(&token[4..]),
            "the token's secret part is in the store file"
        );
        assert!(haystack.contains(&hash), "the hash is stored");
    }
    let client = world.client(&token);
    assert_eq!(client.request("tools/list", json!({})).await.status, 200);
    world
        .app
        .connections
        .revoke(&actor, &connection.id)
        .await
        .unwrap();
    let r = client.request("tools/list", json!({})).await;
    assert_eq!(
        r.status, 401,
        "a revoked connection stops on the next request"
    );
    let audit = crate::support::audit_rows(world.app.store.as_ref(), "acme", None, 10).await;
    let actions: Vec<&str> = audit.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(
        actions,
        ["connection.revoke", "connection.create"],
        "creation and revocation are audited"
    );
    assert!(
        audit
            .iter()
            .all(|a| a.ids == [connection.id.clone()] && a.channel == Channel::Cli)
    );
}
on_every_backend!(connections, connections_are_capped_hashed_and_revocable);

pub(crate) async fn kill_switch_answers_503_and_is_audited(world: World) {
    let token = setup(&world).await;
    let client = world.client(&token);
    let operator = Actor {
        tenant: store::TenantId::new("system"),
        member: store::MemberId::new("oncall"),
        channel: Channel::Cli,
    };
    world
        .app
        .switches
        .set_global(&operator, true, "incident 42")
        .await
        .unwrap();
    world.switch_reached_every_workspace().await;
    let r = client
        .request(
            "tools/call",
            json!({"name": "get_server_status", "arguments": {}}),
        )
        .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("300"));
    assert_eq!(
        client.request("tools/list", json!({})).await.status,
        503,
        "every MCP call"
    );
    let audit = crate::support::audit_rows(world.app.store.as_ref(), "system", None, 5).await;
    assert_eq!(audit[0].action, "kill_switch.on");
    assert_eq!(audit[0].actor, store::MemberId::new("oncall"));
    // A transaction carrying the write guards does not commit while the switch is on.
    let row = store::Key::new("acme#probe", "row");
    let mut ops = identity::switch::write_guards(&store::TenantId::new("acme"));
    ops.push(store::Put::new(row.clone(), store::Item::new()).into());
    assert!(matches!(
        world.app.store.transact_write(ops.clone()).await,
        Err(store::StoreError::TransactionCancelled { .. })
    ));
    assert!(
        world.app.store.get(&row).await.unwrap().is_none(),
        "no row while switched off"
    );
    world
        .app
        .switches
        .set_global(&operator, false, "resolved")
        .await
        .unwrap();
    world.switch_reached_every_workspace().await;
    assert_eq!(
        client.request("tools/list", json!({})).await.status,
        200,
        "connections stay valid"
    );
    world.app.store.transact_write(ops).await.unwrap();
    // The tenant's agent access, off: 503 for that tenant only.
    let ana = Actor {
        tenant: store::TenantId::new("acme"),
        member: store::MemberId::new("ana"),
        channel: Channel::Web,
    };
    world
        .app
        .switches
        .set_agent_access(&ana, false)
        .await
        .unwrap();
    let r = client.request("tools/list", json!({})).await;
    assert_eq!((r.status, r.header("retry-after")), (503, Some("300")));
    world.member("globex", "gus", "owner").await;
    let (_, other) = world.connect("globex", "gus", Toolset::Full).await;
    assert_eq!(
        world
            .client(&other)
            .request("tools/list", json!({}))
            .await
            .status,
        200
    );
    let mut guarded = identity::switch::write_guards(&store::TenantId::new("acme"));
    guarded.push(store::Put::new(store::Key::new("acme#probe", "row2"), store::Item::new()).into());
    assert!(world.app.store.transact_write(guarded).await.is_err());
    world
        .app
        .switches
        .set_agent_access(&ana, true)
        .await
        .unwrap();
    assert_eq!(client.request("tools/list", json!({})).await.status, 200);
    let audit = crate::support::audit_rows(world.app.store.as_ref(), "acme", None, 10).await;
    assert!(
        audit
            .iter()
            .any(|a| a.action == "agent_access.off" && a.channel == Channel::Web)
    );
}
on_every_backend!(kill_switch, kill_switch_answers_503_and_is_audited);

async fn recent_changes_show_this_connections_work(world: World) {
    world.member("acme", "ana", "owner").await;
    world.member("acme", "dan", "dispatcher").await;
    let (ana_con, ana) = world.connect("acme", "ana", Toolset::Full).await;
    let (dan_con, dan) = world.connect("acme", "dan", Toolset::Full).await;
    for (connection, id) in [(&ana_con, "bkg_A"), (&dan_con, "bkg_D")] {
        let entry = AuditEntry {
            tenant: store::TenantId::new("acme"),
            actor: store::MemberId::new("agent"),
            channel: Channel::Mcp {
                connection: connection.clone(),
                client: "contract tests".into(),
            },
            action: "create_booking".into(),
            outcome: "ok".into(),
            approval: None,
            ids: vec![id.into()],
            reason: None,
            at: identity::rfc3339_now(world.app.web.clock.as_ref()),
        };
        world
            .app
            .store
            .transact_write(vec![entry.op(world.app.web.randomness.as_ref())])
            .await
            .unwrap();
    }
    let mine = world
        .client(&dan)
        .call_tool("list_recent_changes", json!({}))
        .await;
    let changes = mine.structured()["changes"].as_array().unwrap().clone();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["ids"], json!(["bkg_D"]));
    assert_eq!(changes[0]["channel"], "mcp");
    let tenant = world
        .client(&dan)
        .call_tool("list_recent_changes", json!({"scope": "tenant"}))
        .await;
    assert!(tenant.is_error(), "a dispatcher lacks audit:read");
    assert_eq!(tenant.structured()["code"], "forbidden");
    let tenant = world
        .client(&ana)
        .call_tool(
            "list_recent_changes",
            json!({"scope": "tenant", "limit": "5"}),
        )
        .await;
    assert!(!tenant.is_error());
    let ids: Vec<&Value> = tenant.structured()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["ids"][0])
        .collect();
    assert!(ids.contains(&&json!("bkg_A")) && ids.contains(&&json!("bkg_D")));
    assert_eq!(
        tenant.structured()["warnings"].as_array().unwrap().len(),
        1,
        "the text limit was coerced"
    );
    // Another tenant sees none of it.
    world.member("globex", "gus", "owner").await;
    let (_, gus) = world.connect("globex", "gus", Toolset::Full).await;
    let other = world
        .client(&gus)
        .call_tool("list_recent_changes", json!({"scope": "tenant"}))
        .await;
    let other_ids: Vec<Value> = other.structured()["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["ids"][0].clone())
        .collect();
    assert!(
        !other_ids.contains(&json!("bkg_A")) && !other_ids.contains(&json!("bkg_D")),
        "{other_ids:?}"
    );
}
on_every_backend!(recent_changes, recent_changes_show_this_connections_work);

/// The connections page shows when each connection was last used; recording it costs one write
/// per connection per hour, never one per call, and never revives a revoked credential.
async fn last_use_is_recorded_once_an_hour(world: World) {
    world.member("acme", "ana", "owner").await;
    let (id, token) = world.connect("acme", "ana", Toolset::Core).await;
    let last_used = |list: Vec<identity::Connection>| {
        list.into_iter()
            .find(|c| id == c.id)
            .expect("the connection is listed")
            .last_used
    };
    let before = world
        .app
        .connections
        .list(&store::TenantId::new("acme"))
        .await
        .unwrap();
    assert_eq!(last_used(before), None, "never used yet");

    let client = world.client(&token);
    client.list_tools().await;
    let first = last_used(
        world
            .app
            .connections
            .list(&store::TenantId::new("acme"))
            .await
            .unwrap(),
    )
    .expect("the first call records the time");
    let at = chrono::DateTime::parse_from_rfc3339(&first).expect("an RFC 3339 time");
    assert!((chrono::Utc::now() - at.to_utc()).num_seconds().abs() < 60);

    client.list_tools().await;
    assert_eq!(
        last_used(
            world
                .app
                .connections
                .list(&store::TenantId::new("acme"))
                .await
                .unwrap()
        ),
        Some(first.clone()),
        "a second call within the hour writes nothing"
    );

    let actor = crate::support::cli_actor("acme", "ana");
    world
        .app
        .connections
        .revoke(&actor, &store::ConnectionId::new(id.as_str()))
        .await
        .unwrap();
    let refused = client.request("tools/list", serde_json::json!({})).await;
    assert_eq!(refused.status, 401);
    let listed = world
        .app
        .connections
        .list(&store::TenantId::new("acme"))
        .await
        .unwrap();
    let revoked = listed.iter().find(|c| id == c.id).unwrap();
    assert!(revoked.revoked);
    assert_eq!(
        revoked.last_used,
        Some(first),
        "a refused call is not a use"
    );
}
on_every_backend!(last_use, last_use_is_recorded_once_an_hour);

/// A token as `ghm_<locator>.<random>` with another locator: what a forger can change.
fn with_locator(token: &str, tenant: &str, creator: &str, connection: &str) -> String {
    let random = token.rsplit_once('.').expect("a token with a locator").1;
    let fields = [tenant, creator, connection].join("\u{1f}");
    format!(
        "ghm_{}.{random}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(fields)
    )
}

/// The locator in an MCP token only says where to read: a changed locator is an unknown
/// token, and a token made before locators (without one) still authenticates, in two round
/// trips, with the same checks.
async fn a_token_locator_grants_nothing(world: World) {
    let token = setup(&world).await;
    world.member("globex", "gus", "owner").await;
    let (globex_connection, _) = world.connect("globex", "gus", Toolset::Full).await;
    let claim = identity::token::locator(&token).expect("new tokens carry a locator");
    assert_eq!(
        (claim.tenant.as_str(), claim.creator.as_str()),
        ("acme", "ana")
    );
    assert_eq!(
        status_of(&world, Some(&format!("Bearer {token}")), &[])
            .await
            .status,
        200
    );
    let forged = [
        with_locator(&token, "globex", "gus", &globex_connection),
        with_locator(&token, "acme", "ana", &globex_connection),
        with_locator(&token, "acme", "gus", claim.connection.as_str()),
    ];
    for forged in &forged {
        let r = status_of(&world, Some(&format!("Bearer {forged}")), &[]).await;
        assert_eq!(r.status, 401, "{forged}");
        // The gate items of a forged claim are never used: a write through it does nothing.
        let call = world
            .client(forged)
            .request(
                "tools/call",
                json!({"name": "create_customer", "arguments": {"name": "Forged", "email": "forged@example.com"}}),
            )
            .await;
        assert_eq!(call.status, 401);
    }
    // A token without a locator: its index item is all there is (as for tokens made before).
    let legacy = format!("ghm_{}", "L".repeat(43));
    let store = &world.app.store;
    let index = store
        .get(&identity::keys::mcp_token(
            &store::TenantId::new("acme"),
            &identity::token::hash(&token),
        ))
        .await
        .unwrap()
        .expect("the token's index item");
    store
        .put(store::Put::new(
            identity::keys::legacy_mcp_token(&identity::token::hash(&legacy)),
            index,
        ))
        .await
        .unwrap();
    assert_eq!(identity::token::locator(&legacy), None);
    let client = world.client(&legacy);
    let created = client
        .call_tool(
            "create_customer",
            json!({"name": "Lena Legacy", "email": "lena.legacy@example.com"}),
        )
        .await;
    assert!(!created.is_error(), "{}", created.text());
    let again = client
        .call_tool(
            "create_customer",
            json!({"name": "Lena Legacy", "email": "lena.legacy@example.com"}),
        )
        .await;
    assert_eq!(again.structured()["replayed"], true, "{}", again.text());
    // Its connection's checks still apply: switched off for the tenant, it is refused.
    world
        .app
        .switches
        .set_agent_access(
            &Actor {
                tenant: store::TenantId::new("acme"),
                member: store::MemberId::new("ana"),
                channel: Channel::Cli,
            },
            false,
        )
        .await
        .unwrap();
    assert_eq!(
        status_of(&world, Some(&format!("Bearer {legacy}")), &[])
            .await
            .status,
        503
    );
    assert_eq!(
        status_of(&world, Some(&format!("Bearer {token}")), &[])
            .await
            .status,
        503
    );
}
on_every_backend!(token_locator, a_token_locator_grants_nothing);

/// Puts the item at `from` where tokens made before ADR 51 kept the index item of the token
/// hashed `hash`.
async fn put_as_legacy(store: &dyn store::Store, from: &store::Key, hash: &str) {
    let item = store.get(from).await.unwrap().expect("an index item");
    store
        .put(store::Put::new(
            identity::keys::legacy_mcp_token(hash),
            item,
        ))
        .await
        .unwrap();
}

/// Moves a token's index item back to where tokens made before ADR 51 kept it (by the hash
/// alone, no mark on the connection), as a store written by an earlier release holds it.
async fn as_made_before_adr_51(world: &World, tenant: &str, connection: &str, token: &str) {
    let store = &world.app.store;
    let tenant = store::TenantId::new(tenant);
    let hash = identity::token::hash(token);
    let index_key = identity::keys::mcp_token(&tenant, &hash);
    put_as_legacy(store.as_ref(), &index_key, &hash).await;
    store.delete(store::Delete::new(index_key)).await.unwrap();
    let connection_key = identity::keys::connection(&tenant, &store::ConnectionId::new(connection));
    store
        .update(store::Update::new(
            connection_key,
            vec![store::UpdateAction::Remove("index_in_tenant".into())],
        ))
        .await
        .unwrap();
}

/// A token whose index item an earlier release kept by its hash alone still works: its first
/// use copies the item into the tenant's partition, where every later call finds it in one
/// batch (ADR 51). A token revoked before its first use never comes back: the revocation
/// leaves a tombstone where the copy would go. A legacy item that names another connection
/// than the token's locator is never copied.
pub(crate) async fn a_token_made_before_adr_51_moves_on_first_use(world: World) {
    world.member("acme", "ana", "owner").await;
    let (connection, token) = world.connect("acme", "ana", Toolset::Full).await;
    let (revoked_connection, revoked) = world.connect("acme", "ana", Toolset::Full).await;
    let (_, other) = world.connect("acme", "ana", Toolset::Full).await;
    as_made_before_adr_51(&world, "acme", &connection, &token).await;
    as_made_before_adr_51(&world, "acme", &revoked_connection, &revoked).await;
    let tenant = store::TenantId::new("acme");
    let store = &world.app.store;
    let moved_to = |t: &str| identity::keys::mcp_token(&tenant, &identity::token::hash(t));
    assert!(store.get(&moved_to(&token)).await.unwrap().is_none());
    let client = world.client(&token);
    let made = client
        .call_tool(
            "create_customer",
            json!({"name": "Olga Older", "email": "olga.older@example.com"}),
        )
        .await;
    assert!(!made.is_error(), "{}", made.text());
    let copy = store.get(&moved_to(&token)).await.unwrap();
    assert!(
        copy.is_some(),
        "the index item is in the tenant's partition after first use"
    );
    let found = client
        .call_tool("find_customers", json!({"query": "Olga"}))
        .await;
    assert!(!found.is_error(), "{}", found.text());
    // Revoked before its first use: refused, and nothing brings it back.
    world
        .app
        .connections
        .revoke(
            &crate::support::cli_actor("acme", "ana"),
            &store::ConnectionId::new(&revoked_connection),
        )
        .await
        .unwrap();
    for _ in 0..2 {
        let refused = status_of(&world, Some(&format!("Bearer {revoked}")), &[]).await;
        assert_eq!(refused.status, 401);
    }
    let tombstone = store
        .get(&moved_to(&revoked))
        .await
        .unwrap()
        .expect("a tombstone");
    assert_eq!(tombstone.get("revoked"), Some(&store::Value::Bool(true)));
    let legacy = identity::keys::legacy_mcp_token(&identity::token::hash(&revoked));
    let legacy = store.get(&legacy).await.unwrap().expect("the legacy item");
    assert_eq!(legacy.get("revoked"), Some(&store::Value::Bool(true)));
    // A legacy item under another token's hash whose connection is not its locator's.
    let other_hash = identity::token::hash(&other);
    let other_key = moved_to(&other);
    let removed = store
        .delete(store::Delete::new(other_key.clone()))
        .await
        .unwrap();
    assert!(removed.is_some(), "the other token's index item");
    put_as_legacy(store.as_ref(), &moved_to(&token), &other_hash).await;
    let refused = status_of(&world, Some(&format!("Bearer {other}")), &[]).await;
    assert_eq!(refused.status, 401);
    assert!(
        store.get(&other_key).await.unwrap().is_none(),
        "nothing copied"
    );
}
on_every_backend!(
    token_made_before_adr_51,
    a_token_made_before_adr_51_moves_on_first_use
);
