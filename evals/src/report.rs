//! The run report: JSON for machines, Markdown for people.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::metrics::{GATE_METRICS, Metrics};
use crate::runner::ScenarioReport;

/// One run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The driver.
    pub driver: String,
    /// The model (or `scripted`).
    pub model: String,
    /// The split(s) run.
    pub split: String,
    /// A free label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Where the server came from.
    pub server: String,
    /// Start time (UTC, RFC 3339).
    pub started_at: String,
    /// Wall time.
    pub duration_ms: u64,
    /// Totals.
    pub totals: Totals,
    /// The gate.
    pub gate: Gate,
    /// Per scenario.
    pub scenarios: Vec<ScenarioReport>,
}

/// What describes a run besides its scenarios.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The driver.
    pub driver: String,
    /// The model (or `scripted`).
    pub model: String,
    /// The split(s) run.
    pub split: String,
    /// A free label.
    pub label: Option<String>,
    /// Where the server came from.
    pub server: String,
    /// Start time (UTC, RFC 3339).
    pub started_at: String,
    /// Wall time.
    pub duration_ms: u64,
}

/// Totals over the run.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// Scenarios run.
    pub scenarios: usize,
    /// Of which every check passed.
    pub succeeded: usize,
    /// Task success rate (0 to 1).
    pub success_rate: f64,
    /// Scenarios the harness could not run.
    pub harness_errors: usize,
    /// Summed metrics.
    pub metrics: Metrics,
}

/// The launch gate.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    /// Every gate metric is zero and the harness ran every scenario.
    pub passed: bool,
    /// The gate metrics' totals.
    pub metrics: BTreeMap<String, u64>,
    /// The metrics above zero.
    pub failing: Vec<String>,
}

impl RunReport {
    /// Builds the report from the scenarios' reports.
    pub fn new(info: RunInfo, scenarios: Vec<ScenarioReport>) -> Self {
        let mut metrics = Metrics::default();
        for s in &scenarios {
            metrics.add(&s.metrics);
        }
        let succeeded = scenarios.iter().filter(|s| s.success).count();
        let harness_errors = scenarios
            .iter()
            .filter(|s| s.harness_error.is_some())
            .count();
        let gate_metrics: BTreeMap<String, u64> = GATE_METRICS
            .iter()
            .map(|m| ((*m).to_owned(), metrics.get(m).unwrap_or(0)))
            .collect();
        let failing: Vec<String> = gate_metrics
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, _)| k.clone())
            .collect();
        RunReport {
            driver: info.driver,
            model: info.model,
            split: info.split,
            label: info.label,
            server: info.server,
            started_at: info.started_at,
            duration_ms: info.duration_ms,
            totals: Totals {
                scenarios: scenarios.len(),
                succeeded,
                success_rate: if scenarios.is_empty() {
                    0.0
                } else {
                    succeeded as f64 / scenarios.len() as f64
                },
                harness_errors,
                metrics,
            },
            gate: Gate {
                passed: failing.is_empty() && harness_errors == 0 && !scenarios.is_empty(),
                metrics: gate_metrics,
                failing,
            },
            scenarios,
        }
    }

    /// The Markdown summary.
    pub fn markdown(&self) -> String {
        let t = &self.totals;
        let mut out = String::new();
        out.push_str("# gatehouse evals\n\n");
        out.push_str(&format!(
            "- driver: `{}`, model: `{}`, split: `{}`{}\n",
            self.driver,
            self.model,
            self.split,
            self.label
                .as_ref()
                .map(|l| format!(", label: {l}"))
                .unwrap_or_default()
        ));
        out.push_str(&format!(
            "- started {} UTC, {:.1} s; server: {}\n",
            self.started_at,
            self.duration_ms as f64 / 1000.0,
            self.server
        ));
        out.push_str(&format!(
            "- gate: **{}**{}\n",
            if self.gate.passed { "PASSED" } else { "FAILED" },
            if self.gate.failing.is_empty() {
                String::new()
            } else {
                format!(" ({} above zero)", self.gate.failing.join(", "))
            }
        ));
        out.push_str(&format!(
            "- task success: {}/{} ({:.0}%); harness errors: {}\n\n",
            t.succeeded,
            t.scenarios,
            t.success_rate * 100.0,
            t.harness_errors
        ));
        out.push_str("| metric | total |\n|---|---:|\n");
        for (k, v) in &self.gate.metrics {
            out.push_str(&format!(
                "| {k} (gate) | {v}{} |\n",
                if *v > 0 { " ❌" } else { "" }
            ));
        }
        for k in [
            "tool_calls",
            "tool_errors",
            "input_tokens",
            "output_tokens",
            "user_replies",
            "effects_executed",
            "cross_tenant_attempts",
        ] {
            out.push_str(&format!("| {k} | {} |\n", t.metrics.get(k).unwrap_or(0)));
        }
        out.push_str("\n| scenario | split | success | dup | unconf | unwanted | x-tenant | generic | calls | tokens |\n");
        out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for s in &self.scenarios {
            let m = &s.metrics;
            let name = match &s.recording {
                Some(r) => format!("{} ({r})", s.id),
                None => s.id.clone(),
            };
            out.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                s.split,
                if s.harness_error.is_some() {
                    "harness error"
                } else if s.success {
                    "yes"
                } else {
                    "no"
                },
                m.duplicates,
                m.unconfirmed_effects,
                m.unwanted_effects,
                m.cross_tenant,
                m.generic_errors,
                m.tool_calls,
                m.input_tokens + m.output_tokens
            ));
        }
        let troubled: Vec<&ScenarioReport> = self
            .scenarios
            .iter()
            .filter(|s| !s.success || !s.gate_ok || s.harness_error.is_some())
            .collect();
        if !troubled.is_empty() {
            out.push_str("\n## Findings\n");
            for s in troubled {
                out.push_str(&format!("\n### {}\n\n", s.id));
                if let Some(e) = &s.harness_error {
                    out.push_str(&format!("- harness error: {e}\n"));
                }
                if let Some(e) = &s.stopped {
                    out.push_str(&format!("- stopped: {e}\n"));
                }
                for f in &s.findings {
                    out.push_str(&format!("- {f}\n"));
                }
                for c in s.checks.iter().filter(|c| !c.passed) {
                    out.push_str(&format!("- check failed: {} — {}\n", c.check, c.detail));
                }
            }
        }
        out
    }

    /// Writes `report.json` and `summary.md` into `dir`.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(self)? + "\n",
        )?;
        std::fs::write(dir.join("summary.md"), self.markdown())?;
        Ok(())
    }
}
