//! Form bodies and HTML escaping.

use std::collections::BTreeMap;

/// Reads an `application/x-www-form-urlencoded` body (or a query string). Any bytes decode:
/// a bad escape or a non-UTF-8 byte becomes U+FFFD, never a failure.
pub(crate) fn parse(body: &[u8]) -> BTreeMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// Escapes text for HTML.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_forms_and_escapes_html() {
        let f = parse(b"member=ana+b&password=p%40ss%26word&empty=");
        assert_eq!(f["member"], "ana b");
        assert_eq!(f["password"], "p@ss&word");
        assert_eq!(f["empty"], "");
        assert_eq!(
            escape("<b onclick=\"x\">&'"),
            "&lt;b onclick=&quot;x&quot;&gt;&amp;&#39;"
        );
        // A `%` before a multi-byte character, or bytes that are not UTF-8, decode lossily.
        let odd = parse("member=%a\u{e9}x&password=%ff%fe".as_bytes());
        assert_eq!(odd["member"], "%a\u{e9}x");
        assert_eq!(odd["password"], "\u{fffd}\u{fffd}");
    }
}
