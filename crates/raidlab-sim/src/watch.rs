//! Watching a running simulation from outside it: how far it is (for a progress bar)
//! and whether to stop now (Ctrl-C). The event loop calls [`checkpoint`] every
//! [`CHECK_EVERY_EVENTS`] events; what it reports to is a closure the caller installs
//! for one run on its own thread with [`watched`], so runs on other threads (a sweep's
//! workers) are watched, or not, independently. A leaf: it knows nothing of the
//! components.
//!
//! Stopping unwinds out of the event loop with an [`Interrupted`] payload (not a
//! panic: no panic hook runs, nothing is printed), which [`watched`] turns into
//! `Err(Interrupted)`. The simulation's state is dropped on the way out; results of a
//! run that was stopped are never produced, so determinism is untouched.

use std::cell::RefCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Events between two checkpoints: a few milliseconds of simulation at the event
/// loop's rate, so a stop is seen well within a second and a checkpoint costs nothing
/// measurable (one counter test per event).
pub const CHECK_EVERY_EVENTS: u64 = 1 << 16;

/// A run stopped by its watcher before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// What a checkpoint tells the watcher: the fraction done in [0, 1], or `None` when
/// the run cannot know it (a trace replay streamed from a file). The watcher returns
/// `true` to stop the run.
pub type Watcher<'a> = dyn FnMut(Option<f64>) -> bool + 'a;

thread_local! {
    // The watcher of the run on this thread, if any. Stored type-erased for the
    // duration of `watched`, which clears it before returning.
    static WATCHER: RefCell<Option<*mut Watcher<'static>>> = const { RefCell::new(None) };
}

/// Runs `run` on this thread with `watcher` called at every checkpoint; returns its
/// value, or `Err(Interrupted)` when the watcher asked to stop. A panic in `run`
/// that is not a stop propagates unchanged.
pub fn watched<R>(watcher: &mut Watcher<'_>, run: impl FnOnce() -> R) -> Result<R, Interrupted> {
    // SAFETY: the pointer is only dereferenced by `checkpoint` on this thread while
    // `run` executes, inside this call, where `watcher` is borrowed mutably; the
    // guard removes it before `watcher`'s borrow ends, even when `run` unwinds. The
    // lifetime is erased only to store it in the thread-local.
    let erased: *mut Watcher<'static> = unsafe { std::mem::transmute(watcher as *mut Watcher<'_>) };
    struct Clear(Option<*mut Watcher<'static>>);
    impl Drop for Clear {
        fn drop(&mut self) {
            WATCHER.with(|w| *w.borrow_mut() = self.0.take());
        }
    }
    let previous = WATCHER.with(|w| w.borrow_mut().replace(erased));
    let _clear = Clear(previous);
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(value) => Ok(value),
        Err(payload) if payload.is::<Interrupted>() => Err(Interrupted),
        Err(payload) => resume_unwind(payload),
    }
}

/// Reports `fraction` to this thread's watcher, if any, and stops the run (unwinds to
/// [`watched`]) when it asks to. Without a watcher, nothing happens.
pub(crate) fn checkpoint(fraction: Option<f64>) {
    let stop = WATCHER.with(|w| match *w.borrow() {
        // SAFETY: see `watched`; the pointer is live while it is installed.
        Some(watcher) => unsafe { (*watcher)(fraction) },
        None => false,
    });
    if stop {
        resume_unwind(Box::new(Interrupted));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watcher_sees_the_checkpoints_of_its_run_only() {
        let mut seen = Vec::new();
        let out = watched(
            &mut |f| {
                seen.push(f);
                false
            },
            || {
                checkpoint(Some(0.5));
                checkpoint(None);
                7
            },
        );
        assert_eq!(out, Ok(7));
        assert_eq!(seen, vec![Some(0.5), None]);
        // Outside `watched`, a checkpoint reports to nobody.
        checkpoint(Some(1.0));
    }

    #[test]
    fn a_stop_unwinds_to_watched_and_clears_the_watcher() {
        let mut calls = 0;
        let out: Result<(), _> = watched(
            &mut |_| {
                calls += 1;
                true
            },
            || {
                checkpoint(Some(0.1));
                unreachable!("the checkpoint stops the run");
            },
        );
        assert_eq!(out, Err(Interrupted));
        assert_eq!(calls, 1);
        checkpoint(Some(0.2));
    }

    #[test]
    fn other_panics_pass_through() {
        let caught = catch_unwind(|| {
            let _ = watched(&mut |_| false, || panic!("a bug"));
        });
        assert!(caught.is_err());
    }
}
