//! Form bodies and HTML escaping.

use std::collections::BTreeMap;

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&text[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads an `application/x-www-form-urlencoded` body.
pub(crate) fn parse(body: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
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
    }
}
