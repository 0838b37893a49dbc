//! Contracts: the runner, the nodes (names unique, expressions resolved),
//! the outputs (of known nodes, public names unique) and at least one
//! output.
//!
//! Every contract's inputs are lowered first, so a `compose` can check its
//! arguments against a contract declared later in the program.

use std::collections::HashMap;

use super::Lowerer;
use super::calls::Stmt;
use super::cycles::{effectful_contracts, graph_of};
use super::expr::Scope;
use crate::ast::{self, ExprKind, Node};
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{self, Graph, MAX_POOL_SIZE, NodeId, NodeKind, Runner};
use crate::source::Span;
use crate::suggest::did_you_mean;

/// A contract's nodes as parsed, turned into its checked nodes in place:
/// the checked nodes take the room of the parsed ones, each parsed node's
/// parts freed (or moved to its checked node) as it is lowered.
type Body = Vec<Node>;

/// The nodes from which a contract's graph is built on a thread of its own
/// while its types are inferred (below, a thread costs more than it saves).
const GRAPH_BESIDE: usize = 16_384;

/// What lowering a contract's nodes tells its graph.
struct Names {
    /// Where each node's name is written, for the graph's diagnostics.
    spans: Vec<Span>,
    /// No node reads itself or a later one.
    in_order: bool,
}

// The checked nodes fit in the room of the parsed ones (what lets
// `collect` reuse it).
const _: () = assert!(
    size_of::<ir::Node>() <= size_of::<Node>() && align_of::<ir::Node>() == align_of::<Node>()
);

/// Takes the nodes out of every contract of `files`, in declaration
/// order (the order of [`Declarations`](super::names::Declarations)), so
/// that lowering can free them one by one.
pub(super) fn take_bodies(files: &mut [(crate::source::FileId, ast::File)]) -> Vec<Body> {
    files
        .iter_mut()
        .flat_map(|(_, file)| &mut file.items)
        .filter_map(|item| match item {
            ast::Item::Contract(contract) => Some(std::mem::take(&mut contract.nodes)),
            _ => None,
        })
        .collect()
}

impl Lowerer<'_> {
    /// Lowers every contract (`bodies[i]` holds the nodes of contract
    /// `i`, consumed here), then checks for recursive composition.
    pub(super) fn lower_contracts(&mut self, bodies: Vec<Body>) -> Vec<ir::Contract> {
        let decls = self.decls;
        self.contract_inputs = bodies
            .iter()
            .map(|nodes| {
                nodes
                    .iter()
                    .filter_map(|n| match n {
                        Node::Input(param) => Some(self.lower_param(param, "input")),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let mut composes = Vec::with_capacity(decls.contracts.len());
        let mut contracts = Vec::with_capacity(decls.contracts.len());
        // `None` for a contract with errors (its graph is not checked).
        let mut names = Vec::with_capacity(decls.contracts.len());
        for (index, (contract, body)) in decls.contracts.iter().zip(bodies).enumerate() {
            let mut sites = Vec::new();
            let errors_before = self.errors;
            let (lowered, read) = self.lower_contract(index, contract, body, &mut sites);
            contracts.push(lowered);
            names.push((self.errors == errors_before).then_some(read));
            composes.push(sites);
        }
        // Graphs come last: gates need to know which contracts make effects.
        let effectful = effectful_contracts(&contracts);
        for (contract, names) in contracts.iter_mut().zip(names) {
            let Some(Names { spans, in_order }) = names else { continue };
            // Types are inferred in an order the graph allows: the order of
            // declaration when no node reads a later one (then beside the
            // graph, for a big contract), else the graph's.
            if in_order {
                let ids = (0..contract.nodes.len()).map(NodeId::from_index);
                let (nodes, effectful) = (&contract.nodes, &effectful);
                let (graph, types) = if nodes.len() >= GRAPH_BESIDE {
                    crate::sync::beside(
                        || graph_of(nodes, effectful),
                        || self.check_types(contract, ids),
                    )
                } else {
                    (graph_of(nodes, effectful), self.check_types(contract, ids))
                };
                self.set_graph(&spans, contract, graph);
                contract.types = types;
            } else {
                let graph = graph_of(&contract.nodes, &effectful);
                self.set_graph(&spans, contract, graph);
                drop(spans);
                contract.types = self.check_types(contract, contract.graph.order().iter().copied());
            }
        }
        self.check_recursive_compose(&composes);
        contracts
    }

    /// One contract, its nodes consumed as they lower; also the place of
    /// each node's name. `composes` receives each composed contract with
    /// the place of its call.
    fn lower_contract(
        &mut self,
        index: usize,
        contract: &ast::Contract,
        body: Body,
        composes: &mut Vec<(usize, Span)>,
    ) -> (ir::Contract, Names) {
        let runner = self.runner(contract);
        let budget = self.budget(contract);
        let name_spans: Vec<Span> = body.iter().map(|n| n.name().span).collect();
        // The scope reads the names in the source (a name is the text at
        // its span), so each node's name can move to its checked node.
        let text = &self.sources[contract.span.file].text;
        let (scope, repeated) = Scope::of_spans(
            text,
            &name_spans,
            "node",
            format!("contract `{}`", contract.name.name),
        );
        self.report_duplicate_nodes(contract, &name_spans, &scope, &repeated);
        let mut inputs = self.contract_inputs[index].clone().into_iter();
        self.input_types = body
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n, Node::Input(_)))
            .map(|(i, _)| u32::try_from(i).unwrap_or(u32::MAX))
            .zip(self.contract_inputs[index].iter().map(|p| p.ty.clone()))
            .collect();
        let mut repeats = repeated.iter().map(|&(i, _)| i).peekable();
        // In place: `collect` reuses the body's vector (see `Body`).
        let nodes: Vec<ir::Node> = body
            .into_iter()
            .enumerate()
            .map(|(i, node)| {
                let var = u32::try_from(i).unwrap_or(u32::MAX - 1);
                scope.entering(var);
                if repeats.next_if_eq(&i).is_none() {
                    scope.note(var);
                }
                let span = node.span();
                let (name, kind) = match node {
                    Node::Input(param) => (
                        param.name.name,
                        NodeKind::Input(Box::new(
                            inputs
                                .next()
                                .unwrap_or_else(|| unreachable!("one lowered param per input")),
                        )),
                    ),
                    Node::Compute(name, expr, _) => {
                        (name.name, self.lower_node_expr(&expr, &scope, Stmt::Compute, composes))
                    }
                    Node::Compose(name, expr, _) => {
                        (name.name, self.lower_node_expr(&expr, &scope, Stmt::Compose, composes))
                    }
                    Node::Guard(guard) => {
                        let ast::Guard { name, condition, message, .. } = *guard;
                        let kind = NodeKind::Guard {
                            condition: self.lower_expr(&condition, &scope),
                            message: message.map(|m| Box::new(self.lower_expr(&m, &scope))),
                        };
                        (name.name, kind)
                    }
                };
                ir::Node { name, kind, span }
            })
            .collect();
        let in_order = scope.read_in_order();
        // Needed only while the nodes lower: freed before the graph is built.
        self.input_types = Vec::new();
        let outputs = self.lower_outputs(contract, &scope, &nodes);
        drop(scope);
        let lowered = ir::Contract {
            name: contract.name.name.to_string(),
            runner,
            budget,
            budget_span: contract.budgets.first().map(|b| b.span),
            nodes,
            outputs,
            graph: Graph::default(),
            gated: Vec::new(),
            types: ir::Types::default(),
            span: contract.span,
            name_span: contract.name.span,
        };
        (lowered, Names { spans: name_spans, in_order })
    }

    /// A node named as an earlier one (`repeated`: each place with the
    /// variable of the first, from [`Scope::of_spans`]).
    fn report_duplicate_nodes(
        &mut self,
        contract: &ast::Contract,
        name_spans: &[Span],
        scope: &Scope<'_>,
        repeated: &[(usize, u32)],
    ) {
        for &(i, first) in repeated {
            let (name, span) = (scope.name(i), name_spans[i]);
            self.push(
                Diagnostic::error(
                    Code::Duplicate,
                    span,
                    format!("node `{name}` is declared twice in contract `{}`", contract.name.name),
                )
                .label("declared again here")
                .note(name_spans[first as usize], "first declared here")
                .help("give each node its own name"),
            );
        }
    }

    /// `runner inline` or `runner thread_pool(pool_size: N)`, N ≥ 1.
    fn runner(&mut self, contract: &ast::Contract) -> Runner {
        let span_of = |r: &ast::Runner| match r {
            ast::Runner::Inline(span) | ast::Runner::ThreadPool(_, span) => *span,
        };
        match self.single(&contract.runners, span_of, "runner") {
            None => Runner::Default,
            Some(ast::Runner::Inline(_)) => Runner::Inline,
            Some(ast::Runner::ThreadPool(args, span)) => self.pool_size(args, *span),
        }
    }

    fn pool_size(&mut self, args: &[ast::Arg], span: Span) -> Runner {
        let mut size = None;
        let mut named = false;
        for arg in args {
            let Some(name) = arg.name.as_ref().filter(|n| &*n.name == "pool_size") else {
                let at = arg.name.as_ref().map_or(arg.value.span, |n| n.span);
                self.push(
                    Diagnostic::error(
                        Code::UnknownArgument,
                        at,
                        "`thread_pool` takes only `pool_size`",
                    )
                    .label("unknown argument")
                    .help("write `runner thread_pool(pool_size: 4)`"),
                );
                continue;
            };
            named = true;
            match arg.value.kind {
                ExprKind::Integer(n) if (1..=MAX_POOL_SIZE).contains(&n) => {
                    size = usize::try_from(n).ok();
                }
                _ => self.push(
                    self.bad_value(
                        arg.value.span,
                        format!("`pool_size` must be a whole number from 1 to {MAX_POOL_SIZE}"),
                    )
                    .note(name.span, "the pool size"),
                ),
            }
        }
        if !named {
            self.push(
                Diagnostic::error(Code::MissingArgument, span, "`thread_pool` needs `pool_size`")
                    .label("no pool size")
                    .help("write `runner thread_pool(pool_size: 4)`, or `runner inline`"),
            );
        }
        size.map_or(Runner::Default, Runner::Pool)
    }

    /// Outputs: each of a node, each public name once; at least one.
    fn lower_outputs(
        &mut self,
        contract: &ast::Contract,
        scope: &Scope<'_>,
        nodes: &[ir::Node],
    ) -> Vec<ir::Output> {
        let mut outputs = Vec::with_capacity(contract.outputs.len());
        let mut public: HashMap<&str, &ast::Output> = HashMap::new();
        for output in &contract.outputs {
            let [head, fields @ ..] = output.path.as_slice() else {
                unreachable!("`output_stmt` has a node name")
            };
            let name = output.alias.as_ref().unwrap_or_else(|| output.path.last().unwrap_or(head));
            if let Some(first) = public.insert(&name.name, output) {
                self.push(
                    Diagnostic::error(
                        Code::Duplicate,
                        name.span,
                        format!("output `{}` is declared twice", name.name),
                    )
                    .label("same public name")
                    .note(first.span, "first output with that name")
                    .help("rename one with `as other_name`"),
                );
            }
            let Some(node) = scope.var(&head.name) else {
                self.push(
                    Diagnostic::error(
                        Code::UnknownOutput,
                        head.span,
                        format!("output of unknown node `{}`", head.name),
                    )
                    .label(format!("not a node of contract `{}`", contract.name.name))
                    .maybe_help(did_you_mean(&head.name, scope.names())),
                );
                continue;
            };
            if let Some(field) = fields.first() {
                self.check_child_output(&nodes[node as usize], field);
            }
            outputs.push(ir::Output {
                name: name.name.to_string(),
                node: NodeId(node),
                fields: fields.iter().map(|f| f.name.to_string()).collect(),
                span: output.span,
            });
        }
        if contract.outputs.is_empty() {
            self.push(
                Diagnostic::error(
                    Code::NoOutputs,
                    contract.name.span,
                    format!("contract `{}` has no outputs", contract.name.name),
                )
                .label("nothing would run")
                .help("add `output <node>` for each result the contract gives"),
            );
        }
        outputs
    }

    /// `output child.field` where `child` composes a contract directly: the
    /// field must be one of that contract's outputs (its value is an object
    /// of exactly those).
    fn check_child_output(&mut self, node: &ir::Node, field: &ast::Ident) {
        let NodeKind::Call(ir::Call { callee: ir::Callee::Contract(id), catch: false, .. }) =
            node.kind
        else {
            return;
        };
        let child = self.decls.contracts[id.index()];
        let names: Vec<&str> = child
            .outputs
            .iter()
            .filter_map(|o| o.alias.as_ref().or(o.path.last()).map(|n| &*n.name))
            .collect();
        if names.contains(&&*field.name) {
            return;
        }
        self.push(
            Diagnostic::error(
                Code::UnknownOutput,
                field.span,
                format!("contract `{}` has no output `{}`", child.name.name, field.name),
            )
            .label(format!("not an output of `{}`", child.name.name))
            .note(child.name.span, "the composed contract")
            .help(
                did_you_mean(&field.name, names.iter().copied())
                    .unwrap_or_else(|| format!("its outputs are {}", crate::suggest::list(&names))),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::GRAPH_BESIDE;
    use crate::compile_source;

    /// A contract whose nodes read only earlier ones (`reversed`: the
    /// same nodes declared last first, so each reads later ones), with a
    /// chain of `len` nodes, a guard, a branch, a `for`, a record field,
    /// an unused node, and `extra` lines.
    fn contract(len: usize, reversed: bool, extra: &str) -> String {
        let mut nodes = vec![
            "compute c0 = x + 1".to_owned(),
            "compute label = name + \"!\"".to_owned(),
            "compute item = {price: 2.5, tags: [\"a\"]}".to_owned(),
        ];
        nodes.extend((1..len).map(|i| format!("compute c{i} = c{} + 1", i - 1)));
        let last = len - 1;
        nodes.extend([
            format!("guard positive = c{last} > 0 else \"must be positive\""),
            format!("compute size = if c{last} > 5 then \"big\" else \"small\""),
            "compute doubled = for t in item.tags: t + t".to_owned(),
            "compute price = item.price * 2".to_owned(),
            "compute unused = x * 2".to_owned(),
        ]);
        if reversed {
            nodes.reverse();
        }
        format!(
            "contract Big {{\n  input x: integer\n  input name: string\n  {}\n{extra}  output c{last}\n  output label\n  output size\n  output doubled\n  output price\n}}\n",
            nodes.join("\n  ")
        )
    }

    /// Each diagnostic's code and message, sorted (their places differ).
    fn said(text: &str) -> Vec<String> {
        let checked = compile_source("big.ign", text);
        let mut said: Vec<String> =
            checked.diagnostics.iter().map(|d| format!("{:?} {}", d.code, d.message)).collect();
        said.sort();
        said
    }

    /// Each node's type and what it reads, by name, sorted.
    fn typed(text: &str) -> Vec<String> {
        let checked = compile_source("big.ign", text);
        let program = checked.program.expect("a clean program");
        let contract = &program.contracts[0];
        let mut typed: Vec<String> = (0..contract.nodes.len())
            .map(crate::ir::NodeId::from_index)
            .map(|id| {
                let mut reads: Vec<&str> =
                    contract.graph.deps(id).iter().map(|d| &*contract[*d].name).collect();
                reads.sort_unstable();
                let ty = contract.types.get(id.index()).expect("a type per node");
                format!("{} : {ty} <- {}", contract[id].name, reads.join(", "))
            })
            .collect();
        typed.sort();
        typed
    }

    #[test]
    fn types_in_declaration_order_are_the_graph_order_s() {
        // Small, and big enough that the graph is built beside the types.
        for len in [3, GRAPH_BESIDE] {
            let (ordered, reversed) = (contract(len, false, ""), contract(len, true, ""));
            assert_eq!(typed(&ordered), typed(&reversed), "{len} nodes");
            assert_eq!(said(&ordered), said(&reversed), "{len} nodes");
            let wrong = "  compute wrong = label - c0\n  output wrong\n";
            let (ordered, reversed) = (contract(len, false, wrong), contract(len, true, wrong));
            let found = said(&ordered);
            assert!(found.iter().any(|d| d.starts_with("OperatorType")), "{found:?}");
            assert_eq!(found, said(&reversed), "{len} nodes");
        }
    }
}
