//! The body of a contract: its statements, and the second thread that may
//! read half of a big one (see [`Split`]).

use super::{Lines, Parser, SPLIT_MIN};
use crate::ast::{
    Budget, BudgetKind, BudgetLimit, Contract, Guard, Ident, Keyword as K, Node, Output, Runner,
};
use crate::source::Span;

/// The nodes of a contract's body after which its vector takes room for
/// the rest of the text (see `Parser::body`).
const RESERVE_AFTER: usize = 4096;

/// Stack of the thread that parses the second half of a body: an
/// expression recurses at most [`MAX_DEPTH`](super::MAX_DEPTH) levels.
const SPLIT_STACK: usize = 16 << 20;

/// Where the body of a contract may be split between two threads.
///
/// The statements of a body are parsed the same way wherever they start:
/// the parser's state at a statement of a body is its position alone (no
/// expression is open). So a second thread parses the statements from a
/// line start in the second half of the text to the end of their block,
/// while this one parses from the body's start; if this thread then
/// reaches that very place as the start of a statement, the second
/// thread's statements are the ones it would have read, and it takes
/// them. Otherwise (the place was inside a string, a bracket, or another
/// declaration) the second thread's work is dropped and this thread reads
/// on alone: the tree is the same either way.
#[derive(Clone, Copy)]
pub(super) enum Split {
    /// No split (small texts, the second thread, and after the one split).
    Never,
    /// At the first line start past the middle of the rest of the text,
    /// for the first contract whose body starts in a rest of at least
    /// [`SPLIT_MIN`] bytes.
    Middle,
    /// At this byte, for the first contract (tests).
    #[cfg(test)]
    At(usize),
}

impl Parser<'_> {
    pub(super) fn contract(&mut self, start: usize) -> Option<Contract> {
        let name = self.ident()?;
        self.expect(b'{')?;
        let mut contract = Contract::new(name, Span::new(self.file, 0, 0));
        let mut lines = Lines::default();
        match self.split_point() {
            Some(at) => self.split_body(&mut contract, &mut lines, at)?,
            None => {
                self.body(&mut contract, &mut lines, None)?;
            }
        }
        if contract.nodes.capacity() > 2 * contract.nodes.len() {
            contract.nodes.shrink_to_fit();
        }
        contract.span = self.span_from(start);
        Some(contract)
    }

    /// Where a contract's body that starts here is split, if anywhere
    /// (see [`Split`]); the split is then used up.
    fn split_point(&mut self) -> Option<usize> {
        let at = match self.split {
            Split::Never => return None,
            Split::Middle => {
                let rest = self.bytes.len() - self.pos;
                if rest < SPLIT_MIN {
                    return None;
                }
                let middle = self.pos + rest / 2;
                let line = self.bytes[middle..].iter().position(|&b| b == b'\n')?;
                self.skip_from(middle + line + 1)
            }
            #[cfg(test)]
            Split::At(at) => at,
        };
        self.split = Split::Never;
        (at > self.pos).then_some(at)
    }

    /// The statements of a contract's body to its `}` (consumed) into
    /// `contract`, each one on a line of its own (`lines`); with `stop`,
    /// until a statement starts there (true: stopped there).
    fn body(
        &mut self,
        contract: &mut Contract,
        lines: &mut Lines,
        stop: Option<usize>,
    ) -> Option<bool> {
        let from = self.pos;
        while !self.eat(b'}') {
            let start = self.pos_after_ws();
            if stop == Some(start) {
                return Some(true);
            }
            let word = self.take_word();
            self.contract_statement(contract, word, start)?;
            lines.add(self.text, start, self.last)?;
            if contract.nodes.len() == RESERVE_AFTER {
                // Room for the rest of the text at the statements' size so
                // far, taken once instead of the vector doubling (each
                // doubling a copy into fresh pages); `contract` gives back
                // what is left over. Only address space until it is used;
                // if even that is refused, the vector grows as usual.
                let per_node = (self.pos - from) / RESERVE_AFTER;
                let rest = (self.bytes.len() - self.pos) / per_node.max(1);
                let _ = contract.nodes.try_reserve_exact(rest);
            }
        }
        Some(false)
    }

    /// The body read by two threads, the second from `at` (see [`Split`]).
    fn split_body(&mut self, contract: &mut Contract, lines: &mut Lines, at: usize) -> Option<()> {
        let mut second = Parser { pos: at, last: at, ..*self };
        std::thread::scope(|scope| {
            let rest = std::thread::Builder::new().stack_size(SPLIT_STACK).spawn_scoped(
                scope,
                move || {
                    let nowhere = Span::new(second.file, 0, 0);
                    let no_name = Ident { name: Box::default(), span: nowhere };
                    let (mut rest, mut rest_lines) =
                        (Contract::new(no_name, nowhere), Lines::default());
                    second.body(&mut rest, &mut rest_lines, None)?;
                    Some((rest, rest_lines, second))
                },
            );
            let Ok(rest) = rest else {
                return self.body(contract, lines, None).map(drop);
            };
            let stopped = self.body(contract, lines, Some(at))?;
            let rest = rest.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match rest {
                Some((rest, rest_lines, second)) if stopped => {
                    lines.append(self.text, rest_lines)?;
                    contract.runners.extend(rest.runners);
                    contract.budgets.extend(rest.budgets);
                    contract.nodes.extend(rest.nodes);
                    contract.outputs.extend(rest.outputs);
                    (self.pos, self.last) = (second.pos, second.last);
                }
                // The second thread failed where this one would: read on
                // (and fail) alone.
                None if stopped => {
                    self.body(contract, lines, None)?;
                }
                _ => {}
            }
            Some(())
        })
    }

    /// One statement of a contract's body, after its first word.
    fn contract_statement(&mut self, contract: &mut Contract, word: &str, s: usize) -> Option<()> {
        let p = self;
        match K::of(word)? {
            keyword @ (K::Compute | K::Compose) => {
                let name = p.ident()?;
                p.expect(b'=')?;
                let expr = p.expr()?;
                let span = p.span_from(s);
                contract.nodes.push(if keyword == K::Compose {
                    Node::Compose(name, expr, span)
                } else {
                    Node::Compute(name, expr, span)
                });
            }
            K::Output => {
                let mut path = vec![p.ident()?];
                while p.eat(b'.') {
                    path.push(p.ident()?);
                }
                let alias = if p.keyword(K::As) { Some(p.ident()?) } else { None };
                contract.outputs.push(Output { path, alias, span: p.span_from(s) });
            }
            K::Guard => {
                let name = p.ident()?;
                p.expect(b'=')?;
                let condition = p.expr()?;
                let message = if p.keyword(K::Else) { Some(p.string()?) } else { None };
                let span = p.span_from(s);
                let guard = Guard { name, condition, message, span };
                contract.nodes.push(Node::Guard(Box::new(guard)));
            }
            K::Input => contract.nodes.push(Node::Input(Box::new(p.param(s)?))),
            K::Runner => {
                let runner = match p.take_keyword()? {
                    K::Inline => Runner::Inline(p.span_from(s)),
                    K::ThreadPool => {
                        let args = if p.eat(b'(') { p.list(b')', Self::arg)? } else { Vec::new() };
                        Runner::ThreadPool(args, p.span_from(s))
                    }
                    _ => return None,
                };
                contract.runners.push(runner);
            }
            K::Budget => {
                let mut limits = Vec::new();
                loop {
                    let at = p.pos_after_ws();
                    let kind = BudgetKind::of(p.take_keyword()?)?;
                    let value = p.number()?;
                    limits.push(BudgetLimit { kind, value, span: p.span_from(at) });
                    if !p.eat(b',') {
                        break;
                    }
                }
                contract.budgets.push(Budget { limits, span: p.span_from(s) });
            }
            _ => return None,
        }
        Some(())
    }
}
