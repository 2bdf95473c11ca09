//! Helpers shared by the integration tests.

/// The local DynamoDB-compatible server's endpoint, from `GATEHOUSE_TEST_DYNAMODB_ENDPOINT`
/// (set by `tests/run`, which starts the server).
///
/// DynamoDB tests are never skipped silently: in CI (`CI` set) a missing endpoint fails the
/// test; elsewhere the skip is printed with its reason so it shows in the output.
pub(crate) fn dynamodb_endpoint(what: &str) -> Option<String> {
    match std::env::var("GATEHOUSE_TEST_DYNAMODB_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => Some(endpoint),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{what}: GATEHOUSE_TEST_DYNAMODB_ENDPOINT is not set in CI; run the tests through tests/run"
            );
            eprintln!(
                "{what}: SKIPPED (GATEHOUSE_TEST_DYNAMODB_ENDPOINT not set; tests/run starts a local server and sets it)"
            );
            None
        }
    }
}

/// Makes `ana` the owner of `acme` and gives her a standard connection that reads bookings,
/// named `client`; returns its MCP token.
pub(crate) async fn owner_connection(app: &app::App, client: &str) -> String {
    app.directory
        .put_member("acme", "ana", "owner", true)
        .await
        .unwrap();
    let actor = identity::Actor {
        tenant: "acme".into(),
        member: "ana".into(),
        channel: identity::Channel::Cli,
    };
    let new = identity::NewConnection {
        rights: ["bookings:read".into()].into(),
        toolset: mcp_pipeline::Toolset::Standard,
        client_name: client.into(),
    };
    let (_, token) = app.connections.create_token(&actor, new).await.unwrap();
    token
}
