//! Trying a request again: on a connection failure, a missed deadline, 429 and 5xx, with
//! exponential backoff (backon's), a server's `Retry-After` (in seconds) taking the place of
//! the computed wait, capped at the policy's longest wait.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable as _};
use bytes::Bytes;

use crate::{Answer, HttpClient, HttpClientError};

/// How often and how patiently a request is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries after the first.
    pub retries: usize,
    /// The wait before the first retry; it doubles each time.
    pub first_wait: Duration,
    /// The longest wait, a server's `Retry-After` included.
    pub longest_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 4,
            first_wait: Duration::from_secs(2),
            longest_wait: Duration::from_secs(60),
        }
    }
}

/// Why one try did not do.
enum Miss {
    /// No answer.
    Unanswered(HttpClientError),
    /// An answer that asks to come back (429, 5xx).
    Busy(Answer),
}

impl Miss {
    /// The server's `Retry-After`, when it gave one in seconds.
    fn retry_after(&self) -> Option<Duration> {
        let Miss::Busy(answer) = self else {
            return None;
        };
        let value = answer.headers.get(http::header::RETRY_AFTER)?;
        let seconds = value.to_str().ok()?.trim().parse::<u64>().ok()?;
        Some(Duration::from_secs(seconds))
    }
}

impl HttpClient {
    /// Sends as [`HttpClient::send`] does, trying again by `policy`; the last answer (a 429 or
    /// 5xx when every try got one), or why there was none.
    pub async fn send_with_retries(
        &self,
        method: http::Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
        policy: RetryPolicy,
    ) -> Result<Answer, HttpClientError> {
        let once = || async {
            match self.send(method.clone(), url, headers, body.clone()).await {
                Ok(a) if a.status == 429 || a.status >= 500 => Err(Miss::Busy(a)),
                Ok(a) => Ok(a),
                Err(e) => Err(Miss::Unanswered(e)),
            }
        };
        let backoff = ExponentialBuilder::default()
            .with_min_delay(policy.first_wait)
            .with_max_delay(policy.longest_wait)
            .with_max_times(policy.retries);
        let outcome = once
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .adjust(|miss: &Miss, planned| {
                // `None` means the backoff gave up; a server's wait does not revive it.
                planned.map(|p| miss.retry_after().map_or(p, |w| w.min(policy.longest_wait)))
            })
            .await;
        match outcome {
            Ok(answer) | Err(Miss::Busy(answer)) => Ok(answer),
            Err(Miss::Unanswered(e)) => Err(e),
        }
    }
}
