//! The pages and the API answer only their own origin (ADR 48). A request must name, in its
//! `Host`, a host the deployment serves as: its public URL's, and on a server listening on
//! loopback, the loopback names at its port; anything else is 421, so that a web page whose
//! name was rebound to this machine's address reaches nothing. A request that changes
//! something (any method but GET and HEAD) must come from this origin: an `Origin` of another
//! is 403 (sign-in included, so that no other site signs a browser in), and a request carrying
//! the session cookie without `Origin` passes only with a `Referer` of this origin.

use http::request::Parts;
use http::{Method, header};

/// Where the pages are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// Hosts a request may name (`host[:port]`, lower case; a default port both with and
    /// without it).
    hosts: Vec<String>,
    /// Origins a change may come from (`scheme://host[:port]`, lower case).
    origins: Vec<String>,
}

/// Why a request was refused before any page saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its `Host` is none of this site's (421).
    Host,
    /// A change from another origin, or a cookie's change without one (403).
    Origin,
}

impl Site {
    /// The site at `public_url` (`scheme://host[:port]`, any path ignored), also answering
    /// to the loopback names at `loopback_port` when the server listens on loopback.
    pub fn new(public_url: &str, loopback_port: Option<u16>) -> Result<Site, String> {
        let (scheme, authority) = split_url(public_url).ok_or_else(|| {
            format!("{public_url:?} is not an http(s) URL like https://gatehouse.example.com")
        })?;
        let mut site = Site {
            hosts: Vec::new(),
            origins: Vec::new(),
        };
        site.add(scheme, &authority);
        if let Some(port) = loopback_port {
            for name in ["127.0.0.1", "localhost", "[::1]"] {
                site.add("http", &format!("{name}:{port}"));
            }
        }
        Ok(site)
    }

    /// A site that answers no request (every one 421): what a deployment gets whose public URL
    /// could not be read, so that a mistake closes the pages rather than opening them.
    pub fn closed() -> Site {
        Site {
            hosts: Vec::new(),
            origins: Vec::new(),
        }
    }

    fn add(&mut self, scheme: &str, authority: &str) {
        let default_port = if scheme == "https" { ":443" } else { ":80" };
        let bare = authority.strip_suffix(default_port).unwrap_or(authority);
        for host in [bare.to_owned(), format!("{bare}{default_port}")] {
            if !self.hosts.contains(&host) {
                self.hosts.push(host);
            }
        }
        let origin = format!("{scheme}://{bare}");
        if !self.origins.contains(&origin) {
            self.origins.push(origin);
        }
    }

    /// Whether `origin` (as a browser sends it) is this site's.
    pub fn is_own_origin(&self, origin: &str) -> bool {
        self.origins.contains(&origin.trim().to_ascii_lowercase())
    }

    /// Refuses a request this site does not serve, or a change that did not come from it.
    pub(crate) fn check(&self, parts: &Parts, has_cookie: bool) -> Result<(), Refusal> {
        let host = parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
            .or_else(|| parts.uri.authority().map(|a| a.as_str().to_owned()))
            .map(|h| h.trim().to_ascii_lowercase());
        if !host.is_some_and(|h| self.hosts.contains(&h)) {
            return Err(Refusal::Host);
        }
        if parts.method == Method::GET || parts.method == Method::HEAD {
            return Ok(());
        }
        let text =
            |name: header::HeaderName| parts.headers.get(name).map(|v| v.to_str().unwrap_or("?"));
        match (text(header::ORIGIN), text(header::REFERER)) {
            (Some(origin), _) if self.is_own_origin(origin) => Ok(()),
            (Some(_), _) => Err(Refusal::Origin),
            (None, _) if !has_cookie => Ok(()),
            (None, Some(referer))
                if split_url(referer).is_some_and(|(scheme, authority)| {
                    self.is_own_origin(&format!("{scheme}://{authority}"))
                }) =>
            {
                Ok(())
            }
            (None, _) => Err(Refusal::Origin),
        }
    }
}

/// The scheme and authority of an http(s) URL (lower case), without path, query or user.
fn split_url(url: &str) -> Option<(&'static str, String)> {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let (scheme, rest) = if let Some(rest) = lower.strip_prefix("https://") {
        ("https", rest)
    } else {
        ("http", lower.strip_prefix("http://")?)
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains(['@', ' ']) {
        return None;
    }
    Some((scheme, authority.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().method(method).uri("/app/login");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn hosts_and_origins() {
        let site = Site::new("https://gh.example.com/app", None).unwrap();
        let ok = |m: &str, h: &[(&str, &str)], cookie| site.check(&parts(m, h), cookie);
        assert_eq!(ok("GET", &[("host", "gh.example.com")], false), Ok(()));
        assert_eq!(ok("GET", &[("host", "GH.example.com:443")], false), Ok(()));
        assert_eq!(
            ok("GET", &[("host", "evil.example")], false),
            Err(Refusal::Host)
        );
        assert_eq!(ok("GET", &[], false), Err(Refusal::Host));
        let post = |h: &[(&str, &str)], cookie| {
            let mut all = vec![("host", "gh.example.com")];
            all.extend_from_slice(h);
            site.check(&parts("POST", &all), cookie)
        };
        assert_eq!(post(&[("origin", "https://gh.example.com")], true), Ok(()));
        assert_eq!(
            post(&[("origin", "https://evil.example")], false),
            Err(Refusal::Origin)
        );
        assert_eq!(post(&[("origin", "null")], false), Err(Refusal::Origin));
        assert_eq!(
            post(&[("origin", "http://gh.example.com")], false),
            Err(Refusal::Origin)
        );
        assert_eq!(post(&[], false), Ok(()), "a script without a cookie");
        assert_eq!(
            post(&[], true),
            Err(Refusal::Origin),
            "a cookie needs an origin"
        );
        assert_eq!(
            post(
                &[("referer", "https://gh.example.com/app/approvals/x")],
                true
            ),
            Ok(())
        );
        assert_eq!(
            post(&[("referer", "https://gh.example.com.evil.example/")], true),
            Err(Refusal::Origin)
        );
    }

    #[test]
    fn loopback_names_at_the_port() {
        let site = Site::new("http://127.0.0.1:8787", Some(8787)).unwrap();
        for host in ["127.0.0.1:8787", "localhost:8787", "[::1]:8787"] {
            assert_eq!(site.check(&parts("GET", &[("host", host)]), false), Ok(()));
        }
        assert!(site.is_own_origin("http://localhost:8787"));
        assert!(!site.is_own_origin("http://localhost:8788"));
        let rebound = parts("GET", &[("host", "attacker.example:8787")]);
        assert_eq!(site.check(&rebound, false), Err(Refusal::Host));
        assert!(Site::new("ftp://x", None).is_err());
    }
}
