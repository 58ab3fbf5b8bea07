//! A progress line on stderr for long runs — only when stderr is a terminal, so
//! logs, pipes and CI output never receive carriage returns or escape codes.
//! It appears after a short delay, so quick runs stay silent.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const DELAY: Duration = Duration::from_millis(300);
const TICK: Duration = Duration::from_millis(100);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

struct Shared {
    phase: Mutex<String>,
    done: AtomicBool,
}

/// A running indicator; dropping it clears the line.
pub struct Progress {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<bool>>,
}

/// Should a progress line be drawn? Only when stderr is a terminal.
pub fn enabled() -> bool {
    std::io::stderr().is_terminal()
}

impl Progress {
    /// Start with a first phase label (e.g. "loading"). Draws nothing unless [`enabled`].
    pub fn start(phase: &str) -> Progress {
        Progress::start_if(enabled(), phase)
    }

    pub fn start_if(on: bool, phase: &str) -> Progress {
        let shared = Arc::new(Shared {
            phase: Mutex::new(phase.to_string()),
            done: AtomicBool::new(false),
        });
        let thread = on.then(|| {
            let s = Arc::clone(&shared);
            std::thread::spawn(move || draw(&s))
        });
        Progress { shared, thread }
    }

    /// Name the current phase.
    pub fn phase(&self, phase: &str) {
        if let Ok(mut p) = self.shared.phase.lock() {
            *p = phase.to_string();
        }
    }

    /// Stop and clear the line.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            if let Ok(true) = t.join() {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(b"\r\x1b[2K");
                let _ = err.flush();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The drawing loop; returns whether anything was drawn.
fn draw(s: &Shared) -> bool {
    let start = Instant::now();
    while start.elapsed() < DELAY {
        if s.done.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut frame = 0usize;
    while !s.done.load(Ordering::SeqCst) {
        let phase = s.phase.lock().map(|p| p.clone()).unwrap_or_default();
        let line = format!(
            "\r\x1b[2K{} {phase}… {:.1}s",
            FRAMES[frame % FRAMES.len()],
            start.elapsed().as_secs_f64()
        );
        {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(line.as_bytes());
            let _ = err.flush();
        }
        frame += 1;
        std::thread::sleep(TICK);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_progress_starts_no_thread() {
        let p = Progress::start_if(false, "loading");
        assert!(p.thread.is_none());
        p.phase("checking");
        p.finish();
    }

    #[test]
    fn a_quick_run_draws_nothing() {
        let p = Progress::start_if(true, "loading");
        let t = {
            let mut p = p;
            p.shared.done.store(true, Ordering::SeqCst);
            p.thread.take().expect("thread")
        };
        assert!(!t.join().expect("joins"), "drew before the delay elapsed");
    }
}
