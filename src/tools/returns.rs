//! `returns <expr>`: a pure expression over the params.
//!
//! Input: the resolved expression and the filled arguments (in param order, so `Var(i)`
//! is param `i`). Output: the value, or the evaluator's message as [`ToolError::Failed`].

use serde_json::{Map, Value};

use super::ToolError;
use crate::eval;
use crate::ir::Expr;

/// Evaluates `expr` with the params as variables.
pub(crate) fn run(expr: &Expr, args: Map<String, Value>) -> Result<Value, ToolError> {
    let scope: Vec<Value> = args.into_iter().map(|(_, v)| v).collect();
    if expr.vars().iter().any(|v| *v as usize >= scope.len()) {
        return Err(ToolError::Failed("the expression reads a param the tool lacks".to_owned()));
    }
    eval::eval_json(expr, &scope).map_err(|e| ToolError::Failed(e.message))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::ir::{BinaryOp, ExprKind, Implementation};
    use crate::tools::Toolbox;
    use crate::tools::test_support::{expr, param, program, tool, ty, var};

    #[tokio::test]
    async fn evaluates_over_params_with_defaults() {
        let mut t = tool("Discount", "Apply a discount");
        t.params = vec![
            param("price", ty("float"), None, None),
            param("rate", ty("float"), Some(json!(0.5)), None),
        ];
        t.implementation = Implementation::Returns(expr(ExprKind::Binary(
            BinaryOp::Mul,
            Box::new(var(0)),
            Box::new(var(1)),
        )));
        let p = program(vec![t]);
        let toolbox = Toolbox::new();
        let id = p.tool_named("discount").unwrap();
        assert_eq!(toolbox.call(&p, id, json!({"price": 10})).await, Ok(json!(5.0)));
        assert_eq!(toolbox.call(&p, id, json!({"price": 10, "rate": 0.1})).await, Ok(json!(1.0)));
    }

    #[tokio::test]
    async fn eval_error_is_a_failure() {
        let mut t = tool("Div", "Divide");
        t.params =
            vec![param("a", ty("integer"), None, None), param("b", ty("integer"), None, None)];
        t.implementation = Implementation::Returns(expr(ExprKind::Binary(
            BinaryOp::Div,
            Box::new(var(0)),
            Box::new(var(1)),
        )));
        let p = program(vec![t]);
        let err = Toolbox::new()
            .call(&p, p.tool_named("Div").unwrap(), json!({"a": 1, "b": 0}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("zero"), "{err}");
    }
}
