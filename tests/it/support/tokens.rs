//! OAuth access tokens signed with the test keys (`tests/fixtures/oauth`), whose public halves
//! are `jwks.json` (`test-rs256`, `test-es256`).

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;

/// `claims` signed with the test key for `alg`, under key id `kid`, typed as an access token
/// (RFC 9068).
pub(crate) fn sign(alg: Algorithm, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    header.typ = Some("at+jwt".into());
    sign_with(header, claims)
}

/// `claims` signed under `header` (its algorithm picks the test key: RSA for RS*, EC for ES*).
pub(crate) fn sign_with(header: Header, claims: &Value) -> String {
    let alg = header.alg;
    let key = match alg {
        Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512 => {
            EncodingKey::from_rsa_pem(include_bytes!("../../fixtures/oauth/rs256-private.pem"))
                .unwrap()
        }
        Algorithm::ES256 => {
            EncodingKey::from_ec_pem(include_bytes!("../../fixtures/oauth/es256-private.pem"))
                .unwrap()
        }
        other => panic!("no test key for {other:?}"),
    };
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

/// The test key set with only the keys named (by `kid`).
pub(crate) fn key_set(kids: &[&str]) -> Value {
    let mut all: Value =
        serde_json::from_str(include_str!("../../fixtures/oauth/jwks.json")).unwrap();
    let keys = all["keys"].as_array_mut().unwrap();
    keys.retain(|k| kids.contains(&k["kid"].as_str().unwrap()));
    all
}
