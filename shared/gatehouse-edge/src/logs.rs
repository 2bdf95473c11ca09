//! The app's log lines at the edge: every `tracing` event at INFO and above is written to the
//! console, one line per event (WARN and ERROR through `console.error`), where Workers Logs,
//! `wrangler tail` and local `workerd` pick it up. Without a subscriber they went nowhere.

use std::io;
use std::sync::Once;

use tracing::Level;
use tracing_subscriber::fmt::MakeWriter;

/// Installs the subscriber once per isolate.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(Level::INFO)
            // The runtime stamps each console line; wasm32 has no system clock to read.
            .without_time()
            .with_ansi(false)
            .with_writer(Console)
            .finish();
        // Another subscriber already set would be a test harness's: keep it.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// Makes one [`Line`] per event.
struct Console;

impl<'a> MakeWriter<'a> for Console {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            text: Vec::new(),
            error: false,
        }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line {
        Line {
            text: Vec::new(),
            error: *meta.level() <= Level::WARN,
        }
    }
}

/// One event's text, written to the console when the event is done with it.
struct Line {
    text: Vec<u8>,
    error: bool,
}

impl io::Write for Line {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let text = text.trim_end();
        if text.is_empty() {
            return;
        }
        if self.error {
            worker::console_error!("{text}");
        } else {
            worker::console_log!("{text}");
        }
    }
}
