//! The product's pages of a `gatehouse serve` process, as a person's browser uses them.

use mcp_test_client::TestClient;

/// The host the pages of a test world answer (its console base's, `app::Settings::default`).
pub(crate) const HOST: &str = "127.0.0.1:8787";
/// The pages' origin in a test world: what a browser sends with each form.
pub(crate) const ORIGIN: &str = "http://127.0.0.1:8787";

/// Signs a demo member of `acme` in on the server at `addr`; returns the session cookie and
/// the session's CSRF token.
pub(crate) async fn form_login(addr: std::net::SocketAddr, member: &str) -> (String, String) {
    let c = TestClient::http(addr);
    let headers = [(
        "content-type".to_owned(),
        "application/x-www-form-urlencoded".to_owned(),
    )];
    let r = c
        .send(
            http::Method::POST,
            "/app/login",
            &headers,
            format!("tenant=acme&member={member}&password=gatehouse-demo").into(),
        )
        .await;
    assert_eq!(r.status, 303, "{member} signs in");
    let cookie = r
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let home = c
        .send(
            http::Method::GET,
            "/app/",
            &[("cookie".into(), cookie.clone())],
            bytes::Bytes::new(),
        )
        .await;
    let body = String::from_utf8_lossy(&home.body).into_owned();
    (cookie, form_value(&body, "csrf"))
}

/// The value of the form field `name` in a page (the session's CSRF token, a form's id).
pub(crate) fn form_value(page: &str, name: &str) -> String {
    page.split(&format!("name=\"{name}\" value=\""))
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no {name} field in {page}"))
        .to_owned()
}

/// The headers a browser sends with a form of the pages of the server at `addr`: the form's
/// type, the session's cookie and the pages' own origin.
pub(crate) fn form_headers(addr: std::net::SocketAddr, cookie: &str) -> [(String, String); 3] {
    [
        (
            "content-type".to_owned(),
            "application/x-www-form-urlencoded".to_owned(),
        ),
        ("cookie".to_owned(), cookie.to_owned()),
        ("origin".to_owned(), format!("http://{addr}")),
    ]
}
