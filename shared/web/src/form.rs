//! Form bodies and query strings (HTML is escaped by `maud` where pages are built).

use std::collections::BTreeMap;

/// Reads an `application/x-www-form-urlencoded` body (or a query string). Any bytes decode:
/// a bad escape or a non-UTF-8 byte becomes U+FFFD, never a failure.
pub(crate) fn parse(body: &[u8]) -> BTreeMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// `text` as one value of a query string.
pub(crate) fn query_value(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_forms_and_encodes_query_values() {
        let f = parse(b"member=ana+b&password=p%40ss%26word&empty=");
        assert_eq!(f["member"], "ana b");
        assert_eq!(f["password"], "p@ss&word");
        assert_eq!(f["empty"], "");
        let next = format!("next={}", query_value("/app/a b&c=d#e"));
        assert_eq!(parse(next.as_bytes())["next"], "/app/a b&c=d#e");
        // A `%` before a multi-byte character, or bytes that are not UTF-8, decode lossily.
        let odd = parse("member=%a\u{e9}x&password=%ff%fe".as_bytes());
        assert_eq!(odd["member"], "%a\u{e9}x");
        assert_eq!(odd["password"], "\u{fffd}\u{fffd}");
    }
}
