//! A small HTTP/1.1 client: plain `http://` over a fresh TCP connection per request (the MCP
//! server and local model servers), and `https://` through the system `curl` program, because
//! the workspace has no TLS client crate. Errors are returned, never panicked.

use std::io::Write as _;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A response as received.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body bytes (de-chunked).
    pub body: Vec<u8>,
}

impl Response {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The parts of an `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainUrl {
    /// Host name or address.
    pub host: String,
    /// Port (80 when absent).
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

/// Parses an `http://` URL.
pub fn parse_plain(url: &str) -> anyhow::Result<PlainUrl> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("not an http:// URL: {url}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !p.contains(']') => (
            h.to_owned(),
            p.parse::<u16>().with_context(|| format!("port in {url}"))?,
        ),
        _ => (authority.to_owned(), 80),
    };
    if host.is_empty() {
        bail!("no host in {url}");
    }
    Ok(PlainUrl { host, port, path })
}

/// POSTs `body` to `url` with `headers`, waiting at most `timeout`.
pub async fn post(
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> anyhow::Result<Response> {
    if url.starts_with("https://") {
        return post_with_curl(url, headers, body, timeout).await;
    }
    let target = parse_plain(url)?;
    tokio::time::timeout(timeout, post_plain(&target, headers, body))
        .await
        .map_err(|_| anyhow!("no answer from {url} within {timeout:?}"))?
}

async fn post_plain(
    url: &PlainUrl,
    headers: &[(String, String)],
    body: &[u8],
) -> anyhow::Result<Response> {
    let mut stream = tokio::net::TcpStream::connect((url.host.as_str(), url.port))
        .await
        .with_context(|| format!("connect to {}:{}", url.host, url.port))?;
    let mut head = format!(
        "POST {} HTTP/1.1\r\nhost: {}:{}\r\nconnection: close\r\ncontent-length: {}\r\n",
        url.path,
        url.host,
        url.port,
        body.len()
    );
    for (k, v) in headers {
        if k.contains(['\r', '\n']) || v.contains(['\r', '\n']) {
            bail!("header {k} contains a line break");
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    parse_response(&raw)
}

/// Parses a raw HTTP/1.1 response (head, then a body with content-length, chunks or EOF).
pub fn parse_response(raw: &[u8]) -> anyhow::Result<Response> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow!("no HTTP response head in {} bytes", raw.len()))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let rest = &raw[split + 4..];
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("bad status line in {head:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Ok(Response {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(pos) = data.windows(2).position(|w| w == b"\r\n") {
        let line = String::from_utf8_lossy(&data[..pos]);
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .with_context(|| format!("bad chunk size {size_text:?}"))?;
        if size == 0 {
            break;
        }
        let start = pos + 2;
        let end = start + size;
        if end > data.len() {
            bail!("truncated chunk");
        }
        out.extend_from_slice(&data[start..end]);
        data = &data[(end + 2).min(data.len())..];
    }
    Ok(out)
}

/// `https://` through `curl`: the headers (which may hold an API key) and the URL go in a
/// config file readable by its owner only, the body in another; nothing secret is on the
/// command line.
async fn post_with_curl(
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> anyhow::Result<Response> {
    let dir = tempfile::tempdir().context("temp dir for curl")?;
    let body_path = dir.path().join("body");
    let out_path = dir.path().join("out");
    let config_path = dir.path().join("config");
    std::fs::write(&body_path, body)?;
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut config = String::new();
    config.push_str(&format!("url = {}\n", quote(url)));
    config.push_str("request = \"POST\"\nsilent\nshow-error\n");
    config.push_str(&format!(
        "data-binary = {}\n",
        quote(&format!("@{}", body_path.display()))
    ));
    config.push_str(&format!(
        "output = {}\n",
        quote(&out_path.display().to_string())
    ));
    config.push_str("write-out = \"%{http_code}\"\n");
    config.push_str(&format!("max-time = \"{}\"\n", timeout.as_secs().max(1)));
    for (k, v) in headers {
        config.push_str(&format!("header = {}\n", quote(&format!("{k}: {v}"))));
    }
    {
        let mut f = std::fs::File::create(&config_path)?;
        f.write_all(config.as_bytes())?;
    }
    let out = tokio::process::Command::new("curl")
        .arg("--config")
        .arg(&config_path)
        .output()
        .await
        .context("run curl (needed for https:// URLs; use an http:// base URL otherwise)")?;
    if !out.status.success() {
        bail!(
            "curl failed for {url}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let status: u16 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .context("curl's status code")?;
    let body = std::fs::read(&out_path).unwrap_or_default();
    Ok(Response {
        status,
        headers: Vec::new(),
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let u = parse_plain("http://127.0.0.1:8787/mcp").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8787, "/mcp")
        );
        let u = parse_plain("http://localhost/v1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("localhost", 80, "/v1")
        );
        assert!(parse_plain("https://x").is_err());
    }

    #[test]
    fn parses_chunked_responses() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let r = parse_response(raw).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body, b"abcde");
        assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    }
}
