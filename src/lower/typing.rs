//! Static types: every node of a contract gets a [`Type`], inferred from
//! its expression, and what cannot work at run time is reported.
//!
//! Runs per contract after its graph is built (so nodes are typed in
//! topological order, without recursion). A tool node's type is its
//! `result` (else `any`), an agent's its `result` (else `string`, the final
//! text), a `compose` an `object`. `any` is never an error: a check fires
//! only when both sides of it are known. Nullable types pass where the
//! plain type is expected (a guard may have ruled `null` out).
//!
//! Reported: a field a record does not have, operators on types they do
//! not take, `if`/guard conditions and `and`/`or`/`not` operands that are
//! not boolean, call arguments whose type does not fit the param, and an
//! enum compared with a string that is none of its variants.

use std::sync::Arc;

use serde_json::Value;

use super::Lowerer;
use crate::diagnostic::{Code, Diagnostic};
use crate::ir::{
    self, BinaryOp, Expr, ExprKind, Function, NodeId, NodeKind, Type, TypeKind, Types, UnaryOp,
};
use crate::source::Span;
use crate::suggest::did_you_mean;
use crate::value::Val;

/// A non-nullable type.
fn of(kind: TypeKind) -> Type {
    Type::new(kind)
}

fn is_number(t: &Type) -> bool {
    matches!(t.kind, TypeKind::Integer | TypeKind::Float)
}

fn is_text(t: &Type) -> bool {
    matches!(t.kind, TypeKind::String | TypeKind::Enum(_))
}

fn known(t: &Type) -> bool {
    t.kind != TypeKind::Any
}

/// True when a value of type `value` may be passed where `param` is expected.
pub(super) fn fits(value: &Type, param: &Type) -> bool {
    use TypeKind as K;
    match (&value.kind, &param.kind) {
        (K::Any, _)
        | (_, K::Any)
        | (K::Integer, K::Integer | K::Float)
        | (K::Float, K::Float)
        | (K::String | K::Enum(_), K::String)
        | (K::String, K::Enum(_))
        | (K::Boolean, K::Boolean)
        | (K::Object | K::Record(_) | K::Media(_), K::Object)
        | (K::Object, K::Record(_) | K::Media(_)) => true,
        (K::Media(a), K::Media(b)) => a == b,
        (K::Enum(a), K::Enum(b)) => a == b,
        (K::Record(a), K::Record(b)) => a == b,
        (K::Array(a), K::Array(b)) => match (a, b) {
            (Some(a), Some(b)) => fits(a, b),
            _ => true,
        },
        _ => false,
    }
}

/// The type two branches may yield.
fn join(a: Type, b: Type) -> Type {
    let kind = if a.kind == b.kind {
        a.kind
    } else if is_number(&a) && is_number(&b) {
        TypeKind::Float
    } else {
        TypeKind::Any
    };
    let nullable = (a.nullable || b.nullable) && kind != TypeKind::Any;
    Type { kind, nullable }
}

/// The type of a constant.
fn literal(value: &Val) -> Type {
    of(match value {
        Val::Null => return Type { kind: TypeKind::Any, nullable: true },
        Val::Bool(_) => TypeKind::Boolean,
        Val::Number(n) if n.is_i64() || n.is_u64() => TypeKind::Integer,
        Val::Number(_) => TypeKind::Float,
        Val::String(_) => TypeKind::String,
        Val::Array(_) => TypeKind::Array(None),
        Val::Object(_) => TypeKind::Object,
    })
}

/// What a pure function returns, `any` where it depends on the values.
fn function_type(function: Function, args: &[Type]) -> Type {
    use Function as F;
    of(match function {
        F::Len | F::Floor | F::Ceil => TypeKind::Integer,
        F::Round if args.len() == 1 => TypeKind::Integer,
        F::Round => TypeKind::Float,
        F::Upper | F::Lower | F::Trim | F::Replace | F::Join | F::ToString | F::ToJson => {
            TypeKind::String
        }
        F::Env if args.len() == 1 => TypeKind::String,
        F::Split | F::Keys => TypeKind::Array(Some(Arc::new(of(TypeKind::String)))),
        F::Values | F::Successes => TypeKind::Array(None),
        F::Failures => TypeKind::Array(Some(Arc::new(of(TypeKind::Object)))),
        F::Contains | F::StartsWith | F::EndsWith | F::Matches => TypeKind::Boolean,
        F::Abs => return args.first().cloned().unwrap_or_else(Type::any),
        F::Min | F::Max | F::Sum | F::Get | F::ToNumber | F::FromJson | F::Env | F::File => {
            TypeKind::Any
        }
    })
}

/// The type of `file("...")`: `image` or `document` by the first bytes of
/// the file when it is there at check time, else `any`.
fn file_type(args: &[Expr]) -> Type {
    let Some(ExprKind::Literal(Val::String(path))) = args.first().map(|a| &a.kind) else {
        return Type::any();
    };
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path.as_str())
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    crate::media::sniff(&head[..read]).map_or_else(Type::any, |f| of(TypeKind::Media(f.kind)))
}

impl Lowerer<'_> {
    /// The static type of every node of `contract`, inferred in `order`
    /// (one the graph allows: every node after the nodes it reads),
    /// reporting what cannot work.
    pub(super) fn check_types(
        &mut self,
        contract: &ir::Contract,
        order: impl Iterator<Item = NodeId>,
    ) -> Types {
        let mut types = Types::any(contract.nodes.len());
        for id in order {
            let node = &contract.nodes[id.index()];
            let ty = match &node.kind {
                NodeKind::Input(param) => param.ty.clone(),
                NodeKind::Compute(expr) => self.infer(expr, &types),
                NodeKind::Call(call) => self.call_type(call, &types),
                NodeKind::Guard { condition, message } => {
                    self.expect_boolean(condition, &types, "a guard condition");
                    if let Some(message) = message {
                        self.infer(message, &types);
                    }
                    of(TypeKind::Boolean)
                }
                NodeKind::Branch(branch) => self.branch_type(branch, node.span, &types),
                NodeKind::For(collection) => self.collection_type(collection, &mut types),
            };
            types.set(id.index(), ty);
        }
        types
    }

    /// A call's type: a tool's `result` (else `any`), an agent's `result`
    /// (else `string`), a contract's outputs (`object`); `try` makes it
    /// the `{ok, ...}` object.
    fn call_type(&mut self, call: &ir::Call, types: &Types) -> Type {
        let ty = match call.callee {
            ir::Callee::Tool(id) => {
                let tools = std::mem::take(&mut self.tools);
                let tool = &tools[id.index()];
                self.check_args(&tool.params, &call.args, types, "tool", &tool.name);
                let ty = tool.result.clone().unwrap_or_else(Type::any);
                self.tools = tools;
                ty
            }
            ir::Callee::Agent(id) => {
                let agents = std::mem::take(&mut self.agents);
                let agent = &agents[id.index()];
                self.check_args(&agent.inputs, &call.args, types, "agent", &agent.name);
                let ty = agent.result.clone().unwrap_or_else(|| of(TypeKind::String));
                self.agents = agents;
                ty
            }
            ir::Callee::Contract(id) => {
                let inputs = std::mem::take(&mut self.contract_inputs);
                let name = &self.decls.contracts[id.index()].name.name;
                self.check_args(&inputs[id.index()], &call.args, types, "contract", name);
                self.contract_inputs = inputs;
                of(TypeKind::Object)
            }
        };
        if call.catch { of(TypeKind::Object) } else { ty }
    }

    fn body_type(&mut self, body: &ir::Body, types: &Types) -> Type {
        match body {
            ir::Body::Pure(expr) => self.infer(expr, types),
            ir::Body::Call(call) => self.call_type(call, types),
        }
    }

    /// `if`/`match` as a node: the condition is boolean, enum patterns are
    /// variants, a `match` without `_` covers every value; the type is the
    /// arms' common type.
    fn branch_type(&mut self, branch: &ir::Branch, span: Span, types: &Types) -> Type {
        let on = match branch.kind {
            ir::BranchKind::If => {
                self.expect_boolean(&branch.on, types, "an `if` condition");
                of(TypeKind::Boolean)
            }
            ir::BranchKind::Match => self.infer(&branch.on, types),
        };
        if branch.kind == ir::BranchKind::Match {
            self.check_match(&on, branch, span);
        }
        let mut ty: Option<Type> = None;
        for arm in &branch.arms {
            let arm_ty = self.body_type(&arm.body, types);
            ty = Some(match ty {
                None => arm_ty,
                Some(prev) => join(prev, arm_ty),
            });
        }
        ty.unwrap_or_else(Type::any)
    }

    /// Patterns of a `match` over a value of type `on`.
    fn check_match(&mut self, on: &Type, branch: &ir::Branch, span: Span) {
        let literals: Vec<(&Value, Span)> = branch
            .arms
            .iter()
            .filter_map(|a| match &a.pattern {
                ir::Pattern::Literal(v) => Some((v, a.span)),
                ir::Pattern::Wildcard => None,
            })
            .collect();
        let wildcard = literals.len() < branch.arms.len();
        if let TypeKind::Enum(e) = &on.kind {
            for (value, at) in &literals {
                if let Value::String(text) = value {
                    self.check_variant_text(e, text, *at);
                }
            }
            let missing: Vec<&str> = e
                .variants
                .iter()
                .filter(|v| !literals.iter().any(|(l, _)| l.as_str() == Some(v.as_str())))
                .map(String::as_str)
                .collect();
            if !wildcard && !missing.is_empty() {
                self.push(
                    Diagnostic::error(
                        Code::NotExhaustive,
                        span,
                        format!(
                            "`match` over enum `{}` is not exhaustive: missing {}",
                            e.name,
                            crate::suggest::list(&missing)
                        ),
                    )
                    .label("some variants have no arm")
                    .note(e.span, format!("`{}` is declared here", e.name))
                    .help("add an arm for each missing variant, or a last arm `_ => ...`"),
                );
            }
            return;
        }
        let booleans =
            [true, false].iter().all(|b| literals.iter().any(|(v, _)| **v == Value::Bool(*b)));
        if !wildcard && !booleans {
            self.push(
                Diagnostic::error(
                    Code::NotExhaustive,
                    span,
                    "`match` is not exhaustive: missing `_`",
                )
                .label("no arm for other values")
                .help("add a last arm `_ => ...` for every other value"),
            );
        }
    }

    /// `for x in items if cond: body`: the item's type is the array's item
    /// type; the node's type is an array of the body's.
    fn collection_type(&mut self, collection: &ir::Collection, types: &mut Types) -> Type {
        let items = self.infer(&collection.items, types);
        let item = match items.kind {
            TypeKind::Array(Some(item)) => Arc::unwrap_or_clone(item),
            _ => Type::any(),
        };
        types.set(collection.var as usize, item);
        if let Some(filter) = &collection.filter {
            self.expect_boolean(filter, types, "a `for` filter");
        }
        let body = self.body_type(&collection.body, types);
        of(TypeKind::Array(Some(Arc::new(body)).filter(|b| known(b))))
    }

    /// Arguments whose known type does not fit their param (constants are
    /// checked where they are written, see `calls.rs`).
    fn check_args(
        &mut self,
        params: &[ir::Param],
        args: &[(String, Expr)],
        types: &Types,
        what: &str,
        callee: &str,
    ) {
        for (name, expr) in args {
            let ty = self.infer(expr, types);
            let Some(param) = params.iter().find(|p| &p.name == name) else { continue };
            if matches!(expr.kind, ExprKind::Literal(_)) || fits(&ty, &param.ty) {
                continue;
            }
            self.push(
                Diagnostic::error(
                    Code::ArgumentType,
                    expr.span,
                    format!(
                        "argument `{name}` of {what} `{callee}` must be `{}`, not `{ty}`",
                        param.ty
                    ),
                )
                .label(format!("`{ty}`"))
                .note(param.span, format!("`{name}` is declared `{}` here", param.ty)),
            );
        }
    }

    /// A tool's `requires_approval when COND`: boolean, over its params.
    pub(super) fn check_approval_condition(&mut self, condition: &Expr, params: &[ir::Param]) {
        let types: Types = params.iter().map(|p| p.ty.clone()).collect();
        self.expect_boolean(condition, &types, "an approval condition");
    }

    /// Infers a condition's type, reporting it when it is known and not boolean.
    pub(super) fn expect_boolean(&mut self, expr: &Expr, types: &Types, what: &str) {
        let ty = self.infer(expr, types);
        if known(&ty) && ty.kind != TypeKind::Boolean {
            self.push(
                Diagnostic::error(
                    Code::ConditionType,
                    expr.span,
                    format!("{what} must be boolean, not `{ty}`"),
                )
                .label(format!("`{ty}`"))
                .help("compare it, e.g. `x > 0`, `x != \"\"`, `x != null`"),
            );
        }
    }

    /// The static type of `expr`; `types` gives each variable's.
    pub(super) fn infer(&mut self, expr: &Expr, types: &Types) -> Type {
        match &expr.kind {
            ExprKind::Literal(value) => literal(value),
            ExprKind::Var(v) => types.get(*v as usize).cloned().unwrap_or_else(Type::any),
            ExprKind::Field(field) => {
                let (target, name) = &**field;
                let target = self.infer(target, types);
                self.field_type(&target, name, expr)
            }
            ExprKind::Index(target, index) => {
                let target = self.infer(target, types);
                self.infer(index, types);
                match target.kind {
                    TypeKind::Array(Some(item)) => Arc::unwrap_or_clone(item),
                    _ => Type::any(),
                }
            }
            ExprKind::Unary(op, operand) => self.unary(*op, operand, types),
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, types, expr),
            ExprKind::If(parts) => {
                let [condition, then, otherwise] = &**parts;
                self.expect_boolean(condition, types, "an `if` condition");
                let a = self.infer(then, types);
                let b = self.infer(otherwise, types);
                join(a, b)
            }
            ExprKind::Array(items) => {
                let mut item: Option<Type> = None;
                for e in items {
                    let t = self.infer(e, types);
                    item = Some(match item {
                        None => t,
                        Some(prev) => join(prev, t),
                    });
                }
                let item = item.filter(known).map(Arc::new);
                of(TypeKind::Array(item))
            }
            ExprKind::Object(entries) => {
                entries.iter().for_each(|(_, e)| {
                    self.infer(e, types);
                });
                of(TypeKind::Object)
            }
            ExprKind::Interpolate(parts) => {
                for part in parts {
                    if let ir::Part::Expr(e) = part {
                        self.infer(e, types);
                    }
                }
                of(TypeKind::String)
            }
            ExprKind::Call(Function::File, args) => file_type(args),
            ExprKind::Call(function, args) => {
                let args: Vec<Type> = args.iter().map(|a| self.infer(a, types)).collect();
                function_type(*function, &args)
            }
        }
    }

    /// `target.name`: the field's type for a record (unknown fields reported).
    fn field_type(&mut self, target: &Type, name: &str, expr: &Expr) -> Type {
        let Some(record) = target.record() else { return Type::any() };
        if let Some(field) = record.field(name) {
            return field.ty.clone();
        }
        let names: Vec<&str> = record.fields.iter().map(|f| f.name.as_str()).collect();
        let help = did_you_mean(name, names.iter().copied())
            .unwrap_or_else(|| format!("`{}` has {}", record.name, crate::suggest::list(&names)));
        self.push(
            Diagnostic::error(
                Code::UnknownField,
                expr.span,
                format!("type `{}` has no field `{name}`", record.name),
            )
            .label(format!("no field `{name}`"))
            .note(record.span, format!("`{}` is declared here", record.name))
            .help(help),
        );
        Type::any()
    }

    fn unary(&mut self, op: UnaryOp, operand: &Expr, types: &Types) -> Type {
        let ty = self.infer(operand, types);
        let (fits, result, needs) = match op {
            UnaryOp::Neg => (is_number(&ty), ty.clone(), "a number"),
            UnaryOp::Not => (ty.kind == TypeKind::Boolean, of(TypeKind::Boolean), "a boolean"),
        };
        if known(&ty) && !fits {
            let symbol = if op == UnaryOp::Neg { "-" } else { "not" };
            self.operator_error(operand, format!("`{symbol}` needs {needs}, not `{ty}`"));
            return Type::any();
        }
        result
    }

    fn binary(&mut self, op: BinaryOp, a: &Expr, b: &Expr, types: &Types, expr: &Expr) -> Type {
        let left = self.infer(a, types);
        let right = self.infer(b, types);
        let both_known = known(&left) && known(&right);
        let symbol = op.symbol();
        let boolean = of(TypeKind::Boolean);
        match op {
            BinaryOp::And | BinaryOp::Or => {
                for (side, ty) in [(a, &left), (b, &right)] {
                    if known(ty) && ty.kind != TypeKind::Boolean {
                        self.operator_error(side, format!("`{symbol}` needs booleans, not `{ty}`"));
                    }
                }
                boolean
            }
            BinaryOp::Eq | BinaryOp::Ne => {
                self.check_variant(&left, b);
                self.check_variant(&right, a);
                boolean
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let ordered =
                    (is_number(&left) && is_number(&right)) || (is_text(&left) && is_text(&right));
                if both_known && !ordered {
                    self.operator_error(
                        expr,
                        format!("cannot compare `{left}` with `{right}` using `{symbol}`"),
                    );
                }
                boolean
            }
            BinaryOp::Add if is_text(&left) && is_text(&right) => of(TypeKind::String),
            BinaryOp::Add
                if matches!(
                    (&left.kind, &right.kind),
                    (TypeKind::Array(_), TypeKind::Array(_))
                ) =>
            {
                join(left, right)
            }
            _ if is_number(&left) && is_number(&right) => {
                let integers = left.kind == TypeKind::Integer && right.kind == TypeKind::Integer;
                of(if integers && op != BinaryOp::Div {
                    TypeKind::Integer
                } else {
                    TypeKind::Float
                })
            }
            _ => {
                let operand_ok = |t: &Type| {
                    !known(t)
                        || is_number(t)
                        || (op == BinaryOp::Add
                            && (is_text(t) || matches!(t.kind, TypeKind::Array(_))))
                };
                if both_known || !operand_ok(&left) || !operand_ok(&right) {
                    let what = if op == BinaryOp::Add {
                        "numbers, strings or arrays of one kind"
                    } else {
                        "numbers"
                    };
                    self.operator_error(
                        expr,
                        format!("`{symbol}` needs {what}, not `{left}` and `{right}`"),
                    );
                }
                Type::any()
            }
        }
    }

    /// `enum_value == "text"` where the text is none of the variants.
    fn check_variant(&mut self, ty: &Type, other: &Expr) {
        if let (TypeKind::Enum(e), ExprKind::Literal(Val::String(text))) = (&ty.kind, &other.kind) {
            self.check_variant_text(e, text, other.span);
        }
    }

    /// Reports `text` at `at` when it is none of the variants of `e`.
    fn check_variant_text(&mut self, e: &ir::Enum, text: &str, at: Span) {
        if e.variants.iter().any(|v| v == text) {
            return;
        }
        let help = did_you_mean(text, e.variants.iter().map(String::as_str))
            .unwrap_or_else(|| format!("the variants are {}", crate::suggest::list(&e.variants)));
        self.push(
            Diagnostic::error(
                Code::EnumVariant,
                at,
                format!("\"{text}\" is not a variant of enum `{}`", e.name),
            )
            .label("never equal")
            .note(e.span, format!("`{}` is declared here", e.name))
            .help(help),
        );
    }

    fn operator_error(&mut self, at: &Expr, message: String) {
        self.push(
            Diagnostic::error(Code::OperatorType, at.span, message)
                .label("wrong type for this operator"),
        );
    }
}
