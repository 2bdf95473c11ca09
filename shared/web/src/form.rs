//! Form bodies and query strings (HTML is escaped by `maud` where pages are built).

use std::collections::BTreeMap;

/// Reads an `application/x-www-form-urlencoded` body (or a query string). Any bytes decode:
/// a bad escape or a non-UTF-8 byte becomes U+FFFD, never a failure.
pub(crate) fn parse(body: &[u8]) -> BTreeMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// Whether `body` is a well-formed `application/x-www-form-urlencoded` body: ASCII only, every
/// `%` followed by two hex digits, and every decoded name and value UTF-8.
pub(crate) fn well_formed(body: &[u8]) -> bool {
    let escapes_ok = body.iter().enumerate().all(|(i, b)| {
        b.is_ascii()
            && (*b != b'%'
                || body
                    .get(i + 1..i + 3)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)))
    });
    escapes_ok
        && body.split(|b| *b == b'&').all(|pair| {
            pair.split(|b| *b == b'=').all(|part| {
                let decoded: Vec<u8> = percent_decoded(part);
                std::str::from_utf8(&decoded).is_ok()
            })
        })
}

/// `part` with `+` as a space and `%XX` escapes decoded (the escapes are checked already).
fn percent_decoded(part: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(part.len());
    let mut i = 0;
    while i < part.len() {
        match part[i] {
            b'%' => {
                let hex = std::str::from_utf8(&part[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// The form's `field` read by `parse`: `Ok(None)` when it is absent, `Err` with the value sent
/// when it is none of the field's options. Our own pages only send options; anything else is a
/// crafted or stale form, refused rather than read as some default.
pub(crate) fn choice<T>(
    form: &BTreeMap<String, String>,
    field: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, String> {
    match form.get(field) {
        None => Ok(None),
        Some(sent) => parse(sent).map(Some).ok_or_else(|| sent.clone()),
    }
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
        assert!(well_formed(b"member=ana+b&password=p%40ss%26word&empty="));
        assert!(well_formed(b""));
        assert!(well_formed("name=J%C3%BCrgen".as_bytes()));
        for bad in [
            &b"member=%a\xc3\xa9x"[..],
            b"password=%ff%fe",
            b"x=%4",
            b"x=%zz",
            b"x=\xff",
        ] {
            assert!(!well_formed(bad), "{bad:?}");
        }
        let next = format!("next={}", query_value("/app/a b&c=d#e"));
        assert_eq!(parse(next.as_bytes())["next"], "/app/a b&c=d#e");
        // A `%` before a multi-byte character, or bytes that are not UTF-8, decode lossily.
        let odd = parse("member=%a\u{e9}x&password=%ff%fe".as_bytes());
        assert_eq!(odd["member"], "%a\u{e9}x");
        assert_eq!(odd["password"], "\u{fffd}\u{fffd}");
    }
}
