//! Where gatehouse itself sends (a webhook, an issuer's keys, an edge deployment's admin
//! route): over https, or over plain http only to this machine. The host is parsed, not
//! matched as a prefix: `http://127.0.0.1.attacker.example/` and
//! `http://localhost:80@attacker.example/` name other machines (ADR 48).

/// Whether `url` is an `https://` URL with a host, or an `http://` URL whose host is exactly a
/// loopback name (`localhost`, `127.0.0.1`, `[::1]`), with no user part.
pub fn is_secure_or_loopback(url: &str) -> bool {
    match split(url) {
        Some(("https", _)) => true,
        Some(("http", host)) => is_loopback_host(host),
        _ => false,
    }
}

/// Whether `url` is a plain `http://` URL to this machine.
pub fn is_loopback_http(url: &str) -> bool {
    matches!(split(url), Some(("http", host)) if is_loopback_host(host))
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "::1"
}

/// The scheme (lower case) and the host of an http(s) URL: refused with a user part, an empty
/// host, a port that is not a number, or blanks.
fn split(url: &str) -> Option<(&'static str, &str)> {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, rest)) if s.eq_ignore_ascii_case("https") => ("https", rest),
        Some((s, rest)) if s.eq_ignore_ascii_case("http") => ("http", rest),
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains(['@', ' ', '\\']) {
        return None;
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':')?)),
            }
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (!host.is_empty() && port_ok).then_some((scheme, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_this_machine() {
        for ok in [
            "https://hooks.example.com/x",
            "http://127.0.0.1:9000/hook",
            "http://localhost/hook",
            "HTTP://LOCALHOST:80",
            "http://[::1]:8787/admin",
        ] {
            assert!(is_secure_or_loopback(ok), "{ok}");
        }
        for bad in [
            "http://127.0.0.1.attacker.example/",
            "http://localhost.attacker.example/",
            "http://localhost:80@attacker.example/",
            "http://127.0.0.1@attacker.example/",
            "http://attacker.example/?127.0.0.1",
            "http://[::1].attacker.example/",
            "http://localhost:80x/",
            "ftp://127.0.0.1/",
            "https://",
            "hooks.example.com",
        ] {
            assert!(!is_secure_or_loopback(bad), "{bad}");
        }
        assert!(is_loopback_http("http://127.0.0.1:1/"));
        assert!(!is_loopback_http("https://127.0.0.1:1/"));
    }
}
