//! `serve --metrics-addr ADDR`: the calls this process served, as a Prometheus text scrape on an
//! address of its own (ADR 54). Counted from the pipeline's one event per tool call
//! (`gatehouse::call`), the same event Lambda turns into embedded metric format lines: by tool,
//! its effect class and the outcome (`ok`, or the error's code, which names the gate that
//! refused: `rate_limited`, `kill_switch`, ...). No tenant, connection or member is a label: their number is unbounded
//! and they say who did what. Off unless asked for: without the flag no layer is installed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The pipeline's per-call event.
const CALL_TARGET: &str = "gatehouse::call";
/// The histogram's upper bounds, in seconds (from half a millisecond to ten seconds).
const BOUNDS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Series kept at most; calls past it are counted under the tool `other`, so that no client
/// can grow the scrape without bound.
const MAX_SERIES: usize = 1_000;

/// Which calls a series counts: the tool, its effect class, the outcome.
type SeriesKey = (String, String, String);

/// One tool and outcome's calls.
#[derive(Debug, Default, Clone)]
struct Series {
    count: u64,
    sum_seconds: f64,
    /// Calls at or under each bound of [`BOUNDS`] (not cumulative; summed when written).
    buckets: [u64; BOUNDS.len()],
}

/// What this process counted.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    series: Mutex<BTreeMap<SeriesKey, Series>>,
}

static INSTALLED: OnceLock<Arc<Metrics>> = OnceLock::new();

impl Metrics {
    /// The process's metrics, made on first use (by the tracing setup when `serve` was asked
    /// for them).
    pub(crate) fn installed() -> Arc<Metrics> {
        Arc::clone(INSTALLED.get_or_init(Arc::default))
    }

    fn count(&self, call: SeriesKey, seconds: f64) {
        let mut series = self
            .series
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = if series.len() >= MAX_SERIES && !series.contains_key(&call) {
            ("other".to_owned(), "other".to_owned(), "other".to_owned())
        } else {
            call
        };
        let one = series.entry(key).or_default();
        one.count += 1;
        one.sum_seconds += seconds;
        if let Some(bucket) = BOUNDS.iter().position(|bound| seconds <= *bound) {
            one.buckets[bucket] += 1;
        }
    }

    /// The scrape, in Prometheus' text format 0.0.4.
    pub(crate) fn render(&self) -> String {
        let series = self
            .series
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut out = String::from(
            "# HELP gatehouse_calls_total Tool calls this process answered, by tool, effect class and outcome (ok, or the error's code).\n\
             # TYPE gatehouse_calls_total counter\n",
        );
        for ((tool, effect, outcome), one) in &series {
            let labels = format!(
                "tool=\"{}\",effect_class=\"{}\",outcome=\"{}\"",
                escape(tool),
                escape(effect),
                escape(outcome)
            );
            out.push_str(&format!(
                "gatehouse_calls_total{{{labels}}} {}\n",
                one.count
            ));
        }
        out.push_str(
            "# HELP mcp_server_operation_duration_seconds Time from a tool call's request to its answer.\n\
             # TYPE mcp_server_operation_duration_seconds histogram\n",
        );
        for ((tool, _, outcome), one) in &series {
            let labels = format!(
                "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{}\",outcome=\"{}\"",
                escape(tool),
                escape(outcome)
            );
            let name = "mcp_server_operation_duration_seconds";
            let mut below = 0;
            for (bound, calls) in BOUNDS.iter().zip(one.buckets) {
                below += calls;
                out.push_str(&format!(
                    "{name}_bucket{{{labels},le=\"{bound}\"}} {below}\n"
                ));
            }
            out.push_str(&format!(
                "{name}_bucket{{{labels},le=\"+Inf\"}} {}\n",
                one.count
            ));
            out.push_str(&format!("{name}_sum{{{labels}}} {}\n", one.sum_seconds));
            out.push_str(&format!("{name}_count{{{labels}}} {}\n", one.count));
        }
        out
    }
}

/// A label value as the text format wants it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The layer that counts each `gatehouse::call` event into [`Metrics::installed`].
pub(crate) struct CallCounter(Arc<Metrics>);

impl CallCounter {
    pub(crate) fn new() -> CallCounter {
        CallCounter(Metrics::installed())
    }
}

impl<S: Subscriber> Layer<S> for CallCounter {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != CALL_TARGET {
            return;
        }
        let mut fields = CallFields::default();
        event.record(&mut fields);
        if let Some(tool) = fields.tool {
            let seconds = fields.duration_ms.unwrap_or_default() / 1000.0;
            let effect = fields.effect.unwrap_or_else(|| "-".to_owned());
            let outcome = fields.outcome.unwrap_or_else(|| "-".to_owned());
            self.0.count((tool, effect, outcome), seconds);
        }
    }
}

#[derive(Default)]
struct CallFields {
    tool: Option<String>,
    effect: Option<String>,
    outcome: Option<String>,
    duration_ms: Option<f64>,
}

impl Visit for CallFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_text(field, value.to_owned());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == "duration_ms" {
            self.duration_ms = Some(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `outcome = %outcome` arrives here, written as its Display.
        self.record_text(field, format!("{value:?}"));
    }
}

impl CallFields {
    fn record_text(&mut self, field: &Field, value: String) {
        match field.name() {
            "tool" => self.tool = Some(value),
            "effect" => self.effect = Some(value),
            "outcome" => self.outcome = Some(value),
            _ => {}
        }
    }
}

/// Answers `GET /metrics` on `listener` with the scrape, anything else with 404, until the
/// process ends.
pub(crate) async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: wait a little rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let metrics = Arc::clone(&metrics);
                async move {
                    let found = req.method() == http::Method::GET && req.uri().path() == "/metrics";
                    let response = if found {
                        mcp_http::text(
                            http::StatusCode::OK,
                            "text/plain; version=0.0.4; charset=utf-8",
                            metrics.render(),
                        )
                    } else {
                        mcp_http::text(
                            http::StatusCode::NOT_FOUND,
                            "text/plain; charset=utf-8",
                            "the scrape is at /metrics\n".to_owned(),
                        )
                    };
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
