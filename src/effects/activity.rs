//! [`Activity`]: knowing when every part of a run waits on its journal's
//! steps, so that a durable journal can start the steps asked for so far
//! in an order that does not depend on timing.
//!
//! Input: the run's scheduler thread and its tasks (tool and agent nodes),
//! each holding a token while it may still ask for a step. Output:
//! [`Activity::quiet`], which resolves once no token is held.
//!
//! | who | holds a token |
//! | --- | --- |
//! | the scheduler thread | unless it waits for a task to finish |
//! | a task | from its start, unless it waits only on steps (at least one) |
//! | a finished task's message to the scheduler | until the scheduler has handled it |
//!
//! A task's waiting is seen through its waker: after a poll that returned
//! pending, it gives its token back when its steps are all it waits for
//! (see [`track`]); a task waiting on anything else (a retry's delay, a
//! file) keeps it. Waking it takes a token again before it can run, so the
//! count reaches zero only when nothing of the run can move until a step
//! answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;
use tokio::sync::Notify;

/// The tokens held in one run.
#[derive(Debug)]
pub struct Activity {
    busy: AtomicUsize,
    quiet: Notify,
}

impl Activity {
    /// A run about to start: its scheduler thread holds the one token.
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(Self { busy: AtomicUsize::new(1), quiet: Notify::new() })
    }

    /// Takes a token.
    pub(crate) fn enter(&self) {
        self.busy.fetch_add(1, Ordering::SeqCst);
    }

    /// Gives a token back.
    pub(crate) fn leave(&self) {
        if self.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.quiet.notify_waiters();
        }
    }

    /// Resolves once no token is held: every task waits on its steps.
    pub async fn quiet(&self) {
        loop {
            let notified = self.quiet.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.busy.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

tokio::task_local! {
    /// The task being polled, for [`waiting_on_step`].
    static TASK: Arc<Task>;
}

/// A tracked task's state.
const RUNNING: u8 = 0;
/// Woken (or new): holds a token, about to be polled.
const WOKEN: u8 = 1;
/// Waits on something other than steps: holds its token.
const HELD: u8 = 2;
/// Waits only on steps: gave its token back.
const IDLE: u8 = 3;

/// One tracked task.
#[derive(Debug)]
struct Task {
    activity: Arc<Activity>,
    state: AtomicU8,
    /// Steps it waits on.
    steps: AtomicUsize,
    /// The waker of the poll in progress.
    inner: AtomicWaker,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut state = self.state.load(Ordering::SeqCst);
        while state != WOKEN {
            match self.state.compare_exchange(state, WOKEN, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    if state == IDLE {
                        self.activity.enter();
                    }
                    break;
                }
                Err(now) => state = now,
            }
        }
        self.inner.wake();
    }
}

/// `task` holding a token of `activity` (taken now) until it finishes;
/// the token then goes with the message the task sent last (the
/// scheduler gives it back once handled). `None`: `task` as it is.
pub(crate) fn track<F: Future>(activity: Option<&Arc<Activity>>, task: F) -> Tracked<F> {
    let task_state = activity.map(|activity| {
        activity.enter();
        let task = Arc::new(Task {
            activity: Arc::clone(activity),
            state: AtomicU8::new(WOKEN),
            steps: AtomicUsize::new(0),
            inner: AtomicWaker::new(),
        });
        (Waker::from(Arc::clone(&task)), task)
    });
    Tracked { task: Box::pin(task), state: task_state }
}

/// A future under [`track`].
pub(crate) struct Tracked<F> {
    task: Pin<Box<F>>,
    state: Option<(Waker, Arc<Task>)>,
}

impl<F: Future> Future for Tracked<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let Some((waker, task)) = &this.state else {
            return this.task.as_mut().poll(cx);
        };
        task.inner.register(cx.waker());
        if task.state.swap(RUNNING, Ordering::SeqCst) == IDLE {
            // Polled without a wake of ours: it may move, so it holds a token.
            task.activity.enter();
        }
        let mut inner = Context::from_waker(waker);
        let polled = TASK.sync_scope(Arc::clone(task), || this.task.as_mut().poll(&mut inner));
        if polled.is_pending() {
            let waits_on_steps = task.steps.load(Ordering::SeqCst) > 0;
            let next = if waits_on_steps { IDLE } else { HELD };
            let parked =
                task.state.compare_exchange(RUNNING, next, Ordering::SeqCst, Ordering::SeqCst);
            if parked.is_ok() && waits_on_steps {
                task.activity.leave();
            }
        }
        polled
    }
}

/// Counts a step the current tracked task waits on until the guard drops.
pub(crate) fn waiting_on_step() -> Option<StepWait> {
    TASK.try_with(|task| {
        task.steps.fetch_add(1, Ordering::SeqCst);
        StepWait(Arc::clone(task))
    })
    .ok()
}

/// See [`waiting_on_step`].
pub(crate) struct StepWait(Arc<Task>);

impl Drop for StepWait {
    fn drop(&mut self) {
        self.0.steps.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::oneshot;

    use super::{Activity, track, waiting_on_step};

    fn is_quiet(activity: &Activity) -> bool {
        futures_util::FutureExt::now_or_never(activity.quiet()).is_some()
    }

    #[tokio::test]
    async fn quiet_only_when_every_task_waits_on_steps() {
        let activity = Activity::new();
        let (answer, answered) = oneshot::channel::<u32>();
        let (delay_done, delayed) = oneshot::channel::<()>();
        let on_step = tokio::spawn(track(Some(&activity), async move {
            let _wait = waiting_on_step();
            answered.await.unwrap()
        }));
        let on_delay = tokio::spawn(track(Some(&activity), async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = delay_done.send(());
        }));
        // The scheduler's own token.
        activity.leave();
        delayed.await.unwrap();
        on_delay.await.unwrap();
        // The finished task's token went with its message: handled now.
        activity.leave();
        tokio::time::timeout(Duration::from_secs(5), activity.quiet()).await.unwrap();
        answer.send(7).unwrap();
        assert!(!is_quiet(&activity), "an answered step wakes its task");
        assert_eq!(on_step.await.unwrap(), 7);
        activity.leave();
        assert!(is_quiet(&activity));
    }

    #[tokio::test]
    async fn a_task_waiting_on_other_things_holds_its_token() {
        let activity = Activity::new();
        activity.leave();
        let (_keep, never) = oneshot::channel::<()>();
        let task = tokio::spawn(track(Some(&activity), async move {
            let _ = never.await;
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!is_quiet(&activity));
        task.abort();
    }
}
