//! How the core runs calls: a composing call starts a child execution, a
//! waiting call is started by [`Nodes::start`] and its answer comes back
//! as a [`Done`]; under `try` a result or failure becomes the call's
//! value ([`try_value`]), and a failure otherwise climbs to the nearest
//! `try` above its execution, abandoning what it passes, or fails the run.

use super::{Core, Nodes, Observer};
use crate::eval::Val;
use crate::runtime::schedule::failure::{Failure, try_value};
use crate::runtime::schedule::job::Job;
use crate::runtime::schedule::nodes::{Done, NotStarted};

impl<N: Nodes, O: Observer<Call = N::Watch>> Core<'_, N, O> {
    /// Starts the child execution of a contract call.
    pub(super) fn compose(&mut self, job: Job) {
        let bound = self.nodes.bind(&self.at(job));
        match bound {
            Ok((contract, values)) => {
                let outputs = (0..self.nodes.outputs(contract)).collect();
                let path = || self.path_of(job);
                let site = self.call_site(job, &path);
                let scope = self.observer.exec_started(self.scope_of(job), &site);
                self.start(contract, values, outputs, Some(job), scope);
            }
            Err(failure) => self.deliver(job, Err(failure)),
        }
    }

    /// Starts a waiting call.
    pub(super) fn start_waiting(&mut self, job: Job) {
        if self.is_dead(job.exec) {
            return;
        }
        let started = {
            let path = || self.path_of(job);
            let site = self.call_site(job, &path);
            let scope = self.scope_of(job);
            let watch = || self.observer.call_started(scope, &site);
            self.nodes.start(&self.at(job), self.node_path(job.exec, job.node), &self.tx, watch)
        };
        match started {
            Ok(task) => {
                self.tasks.push(task);
                self.in_flight += 1;
            }
            Err(NotStarted::Args(failure)) => self.deliver(job, Err(failure)),
            Err(NotStarted::Machinery(failure)) => self.fail(failure),
        }
    }

    pub(super) fn complete(&mut self, done: Done<N::Answer>) {
        self.in_flight -= 1;
        if self.is_dead(done.job.exec) {
            return;
        }
        let job = done.job;
        let result = self.nodes.answer(&self.at(job), done.answer);
        let path = || self.path_of(job);
        let site = self.call_site(job, &path);
        self.observer.call_finished(&site, done.started, result.is_ok());
        self.deliver(job, result);
    }

    /// A call's result: under `try` it becomes `{ok, ...}`; a failure
    /// otherwise fails the run. An item's value goes to its `for` node.
    pub(super) fn deliver(&mut self, job: Job, result: Result<Val, Failure>) {
        if self.is_dead(job.exec) {
            return;
        }
        // A call waiting for approval is no failure: the node stays undone
        // (what needs it waits too) and the rest of the run goes on.
        let result = match result {
            Err(failure) if failure.waits_for().is_some() => return self.paused.push(failure),
            result => result,
        };
        let catch = self.call_of(job).is_some_and(|call| call.catch);
        let value = match (catch, result) {
            (true, result) => try_value(result),
            (false, Ok(value)) => value,
            (false, Err(failure)) => return self.fail(failure),
        };
        let Some(i) = job.item else { return self.finish(job, value) };
        let e = &mut self.execs[job.exec];
        let Some(gather) = e.gathers.get_mut(&job.node) else { return };
        gather.results[i as usize] = value;
        gather.left -= 1;
        if gather.left == 0 {
            let results = std::mem::take(&mut gather.results);
            if let Some(done) = e.gathers.remove(&job.node) {
                self.observer.group_finished(&done.scope);
            }
            self.finish(Job::node(job.exec, job.node), Val::array(results));
        }
    }

    /// A failure: the nearest `try` above a child execution catches it
    /// (the child is abandoned); otherwise it fails the run.
    pub(super) fn fail(&mut self, failure: Failure) {
        if self.is_dead(failure.job.exec) {
            return;
        }
        let mut exec = failure.job.exec;
        while let Some(parent) = self.execs[exec].parent {
            // The `compose` node whose execution failed.
            self.observer.exec_failed(&self.execs[exec].scope, failure.code.as_str());
            if self.call_of(parent).is_some_and(|call| call.catch) {
                self.abandon(exec);
                return self.deliver(parent, Err(failure));
            }
            exec = parent.exec;
        }
        self.failures.push(failure);
    }
}
