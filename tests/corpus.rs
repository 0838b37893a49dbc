//! The fixture corpus: `ok/*.ign` must check clean (snapshot: the lowered
//! graphs), `err/*.ign` must report something (snapshot: source and
//! rendered diagnostics), `syntax/*.ign` shows what each construct parses to
//! (snapshot: S-expressions of the nodes), `plan/*.ign` the worst cases
//! and dry runs of `ignite plan` (worked out by hand in each fixture). Helper files of multi-file fixtures live in
//! `support/` folders, which the globs do not match.

#![allow(clippy::unwrap_used)]
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use igniter::ast;
use igniter::ir::{
    Body, Call, Callee, Contract, Implementation, NodeKind, Pattern, Program, ProviderChoice,
};

/// `path` relative to the crate, so snapshots do not depend on where the
/// repository is checked out (tests run in the crate folder).
fn relative(path: &Path) -> PathBuf {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(path).to_path_buf()
}

#[test]
fn ok() {
    insta::glob!("corpus/ok/*.ign", |path| {
        let compilation = igniter::compile(&relative(path));
        let rendered = compilation.diagnostics.render(&compilation.sources, false, 80);
        let program = compilation
            .program
            .as_ref()
            .unwrap_or_else(|| panic!("{} has errors:\n{rendered}", path.display()));
        let mut out = dump(program);
        if !rendered.is_empty() {
            out.push_str("----- WARNINGS\n");
            out.push_str(&rendered);
        }
        insta::assert_snapshot!(out);
    });
}

/// `plan/*.ign`: each contract's worst case (`ignite plan`), with the
/// warnings `check` gives; with a `NAME.inputs.json`, the dry run of the
/// root contract on it (`ignite plan --inputs`).
#[test]
fn plan() {
    insta::glob!("corpus/plan/*.ign", |path| {
        let compilation = igniter::compile(&relative(path));
        let rendered = compilation.diagnostics.render(&compilation.sources, false, 80);
        let program = compilation
            .program
            .unwrap_or_else(|| panic!("{} has errors:\n{rendered}", path.display()));
        let mut out = String::new();
        for i in 0..program.contracts.len() {
            let id = igniter::ir::ContractId::from_index(i);
            out.push_str(
                &igniter::plan::plan(&program, id, igniter::plan::Options::default()).render(),
            );
            out.push('\n');
        }
        let inputs = path.with_extension("inputs.json");
        let engine = igniter::runtime::Engine::new(program);
        if inputs.exists() {
            let inputs: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&std::fs::read_to_string(&inputs).unwrap()).unwrap();
            let root = engine.contract(None).unwrap();
            out.push_str(&igniter::plan::dry::dry_run(engine.program(), root, &inputs).render());
        }
        if !rendered.is_empty() {
            out.push_str("----- WARNINGS\n");
            out.push_str(&rendered);
        }
        insta::assert_snapshot!(out);
    });
}

#[test]
fn err() {
    insta::glob!("corpus/err/*.ign", |path| {
        let compilation = igniter::compile(&relative(path));
        assert!(
            !compilation.diagnostics.is_empty(),
            "{} is in err/ but checks clean; move it to ok/",
            path.display()
        );
        let source = std::fs::read_to_string(path).unwrap_or_default();
        let rendered = compilation.diagnostics.render(&compilation.sources, false, 80);
        insta::assert_snapshot!(format!("----- SOURCE\n{source}\n----- DIAGNOSTICS\n{rendered}"));
    });
}

/// Run-time codes no fixture can produce: a server's run that stopped
/// abnormally (a panic in the engine, which no input should cause; a
/// native tool's panic is caught as its failure). Kept short and checked,
/// so that a new fixture removes its code from here.
const WITHOUT_FIXTURE: &[&str] = &["ignite::serve::internal"];

#[test]
fn every_code_has_a_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = String::new();
    for entry in std::fs::read_dir(root.join("tests/snapshots")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if ["corpus__err@", "run__run_errors@", "cli__run_"].iter().any(|p| name.starts_with(p)) {
            text.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    // Run-time codes that need a local server (an HTTP status, a served
    // run, a provider's malformed reply) are asserted by the tests that
    // start one.
    let mut tests = Vec::new();
    collect_ext(&root.join("tests"), "rs", &mut tests);
    for file in tests.iter().filter(|f| !f.ends_with("corpus.rs")) {
        text.push_str(&std::fs::read_to_string(file).unwrap());
    }
    let missing: Vec<&str> = igniter::diagnostic::Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !text.contains(c) && !WITHOUT_FIXTURE.contains(c))
        .collect();
    assert!(
        missing.is_empty(),
        "codes without an err/ or run_err/ fixture, a `run` CLI test or a test asserting them: {missing:?}"
    );
    let covered: Vec<&&str> = WITHOUT_FIXTURE.iter().filter(|c| text.contains(**c)).collect();
    assert!(covered.is_empty(), "{covered:?} now have a fixture: remove them from WITHOUT_FIXTURE");
}

/// docs/errors.md lists every code of the table, and no other.
#[test]
fn every_code_is_documented() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md"))
            .unwrap();
    let listed: Vec<&str> = docs
        .lines()
        .filter_map(|line| line.strip_prefix("| `ignite::"))
        .filter_map(|rest| rest.split('`').next())
        .collect();
    let table: Vec<String> = igniter::diagnostic::Code::ALL
        .iter()
        .map(|c| c.as_str().trim_start_matches("ignite::").to_owned())
        .collect();
    let missing: Vec<&String> = table.iter().filter(|c| !listed.contains(&c.as_str())).collect();
    let extra: Vec<&&str> = listed.iter().filter(|c| !table.iter().any(|t| t == **c)).collect();
    assert!(missing.is_empty(), "codes missing from docs/errors.md: {missing:?}");
    assert!(extra.is_empty(), "docs/errors.md lists codes the table does not have: {extra:?}");
}

#[test]
fn examples_check_clean() {
    let mut files = Vec::new();
    collect(Path::new("contracts"), &mut files);
    assert!(!files.is_empty());
    for file in files {
        let compilation = igniter::compile(&file);
        let rendered = compilation.diagnostics.render(&compilation.sources, false, 80);
        assert!(compilation.diagnostics.is_empty(), "{}:\n{rendered}", file.display());
    }
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    collect_ext(dir, "ign", files);
}

/// Every file under `dir` whose extension is `ext`.
fn collect_ext(dir: &Path, ext: &str, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_ext(&path, ext, files);
        } else if path.extension().is_some_and(|e| e == ext) {
            files.push(path);
        }
    }
}

/// A stable text dump of a program: tools, agents, providers, then each
/// contract's nodes in topological order with kinds, deps and types.
fn dump(program: &Program) -> String {
    let mut out = String::new();
    for tool in &program.tools {
        let implementation = match &tool.implementation {
            Implementation::Returns(_) => "returns".to_owned(),
            Implementation::Exec { program, args } => format!("exec {program} {}", args.join(" ")),
            Implementation::Http { method, headers, .. } => {
                format!("http {method:?} ({} headers)", headers.len())
            }
            Implementation::Builtin { builtin, config } => {
                format!("builtin {} {}", builtin.name(), serde_json::Value::Object(config.clone()))
            }
            Implementation::Native { name } => format!("native {name}"),
            Implementation::Mcp(mcp) => format!(
                "mcp {} ({}, timeout {:?}) {} {}",
                mcp.server.name,
                mcp.server.transport,
                mcp.server.timeout,
                mcp.tool,
                mcp.locked.hash
            ),
        };
        let params: Vec<String> = tool
            .params
            .iter()
            .map(|p| {
                let default = p.default.as_ref().map(|d| format!(" = {d}")).unwrap_or_default();
                format!("{}: {}{default}", p.name, p.ty)
            })
            .collect();
        let result = tool.result.as_ref().map(|t| format!(" -> {t}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "tool {} as `{}` ({}){result} needs [{}]: {implementation}, timeout {:?}",
            tool.name,
            tool.tool_name,
            params.join(", "),
            tool.capabilities.join(", "),
            tool.timeout
        );
        if let Some(approval) = &tool.approval {
            let when = if approval.when.is_some() { " when (a condition)" } else { "" };
            let _ = writeln!(out, "  requires_approval{when}");
        }
    }
    for agent in &program.agents {
        let providers: Vec<String> = agent
            .providers
            .iter()
            .map(|p| match p {
                ProviderChoice::Kind(k) => k.name().to_owned(),
                ProviderChoice::Declared(id) => program[*id].name.clone(),
                ProviderChoice::Script(path) => format!("script {}", path.display()),
            })
            .collect();
        let tools: Vec<&str> = agent.tools.iter().map(|t| program[*t].name.as_str()).collect();
        let inputs: Vec<String> =
            agent.inputs.iter().map(|p| format!("{}: {}", p.name, p.ty)).collect();
        let _ = writeln!(
            out,
            "agent {} providers [{}] models [{}] tools [{}] capabilities [{}] iterations {} \
             temperature {:?} max_tokens {:?} inputs ({})",
            agent.name,
            providers.join(", "),
            agent.models.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
            tools.join(", "),
            agent.capabilities.join(", "),
            agent.max_tool_iterations,
            agent.temperature,
            agent.max_tokens,
            inputs.join(", ")
        );
        if let Some(result) = &agent.result {
            let _ = writeln!(out, "  result {result}, {} repair(s)", agent.result_retries);
        }
    }
    for provider in &program.providers {
        let _ = writeln!(
            out,
            "provider {} kind {} base_url {:?} api_key_env {:?} timeout {:?} retries {:?}{}",
            provider.name,
            provider.kind.name(),
            provider.base_url,
            provider.api_key_env,
            provider.timeout,
            provider.retries,
            limits(provider)
        );
    }
    for contract in &program.contracts {
        dump_contract(program, contract, &mut out);
    }
    for eval in &program.evals {
        dump_eval_block(program, eval, &mut out);
    }
    out
}

/// A checked eval: its contract, dataset, samples, scores and requires.
fn dump_eval_block(program: &Program, eval: &igniter::ir::Eval, out: &mut String) {
    let dataset = relative(&eval.dataset);
    let _ = writeln!(
        out,
        "eval {:?} runs {} over {} × {}",
        eval.name,
        program[eval.contract].name,
        dataset.display(),
        eval.repeat
    );
    for score in &eval.scores {
        let how = match &score.value {
            igniter::ir::ScoreValue::Expr(_) => "expression".to_owned(),
            igniter::ir::ScoreValue::Judge { judge, args } => {
                let name = match judge {
                    igniter::ir::Judge::Agent(id) => &program[*id].name,
                    igniter::ir::Judge::Contract(id) => &program[*id].name,
                };
                let args: Vec<&str> = args.iter().map(|(n, _)| n.as_str()).collect();
                format!("judge {name}({})", args.join(", "))
            }
        };
        let _ = writeln!(out, "  score {} ({:?}): {how}", score.name, score.kind);
    }
    for require in &eval.requires {
        let _ = writeln!(out, "  require {}", require.text);
    }
}

/// A provider's limits and price, when it sets any.
fn limits(provider: &igniter::ir::Provider) -> String {
    let mut out = String::new();
    for (what, rate) in [("rate_limit", provider.rate_limit), ("token_limit", provider.token_limit)]
    {
        if let Some(rate) = rate {
            let _ = write!(out, " {what} {} per {:?}", rate.count, rate.period);
        }
    }
    if let Some(price) = provider.price {
        let _ = write!(out, " price input {} output {}", price.input, price.output);
    }
    out
}

fn dump_contract(program: &Program, contract: &Contract, out: &mut String) {
    let _ = writeln!(out, "contract {} ({:?})", contract.name, contract.runner);
    if !contract.budget.is_empty() {
        let _ = writeln!(out, "  budget {}", contract.budget);
    }
    for &id in contract.graph.order() {
        let node = &contract[id];
        let what = match &node.kind {
            NodeKind::Input(p) => {
                let default = p.default.as_ref().map(|d| format!(" = {d}")).unwrap_or_default();
                format!("input {}: {}{default}", node.name, p.ty)
            }
            NodeKind::Call(call) => {
                format!("{} {} = {}", call.callee.label(), node.name, call_text(program, call))
            }
            NodeKind::Branch(branch) => {
                let arms: Vec<String> = branch
                    .arms
                    .iter()
                    .map(|arm| {
                        let pattern = match &arm.pattern {
                            Pattern::Wildcard => "_".to_owned(),
                            Pattern::Literal(value) => value.to_string(),
                        };
                        let deps: Vec<&str> =
                            arm.deps.iter().map(|d| &*contract[*d].name).collect();
                        format!(
                            "{pattern} => {} [{}]",
                            body_text(program, &arm.body),
                            deps.join(", ")
                        )
                    })
                    .collect();
                let waits: Vec<&str> = branch.deps.iter().map(|d| &*contract[*d].name).collect();
                format!("branch {} on [{}] {{ {} }}", node.name, waits.join(", "), arms.join("; "))
            }
            NodeKind::For(each) => format!(
                "for {}{} = {}",
                node.name,
                if each.filter.is_some() { " (filtered)" } else { "" },
                body_text(program, &each.body)
            ),
            other => format!("{} {}", other.label(), node.name),
        };
        let what = match &node.kind {
            NodeKind::Input(_) => what,
            _ => format!("{what} : {}", contract.types.get(id.index()).expect("a type per node")),
        };
        let deps: Vec<String> = contract
            .graph
            .deps(id)
            .iter()
            .map(|d| {
                let gate = contract.gated.contains(&id)
                    && matches!(contract[*d].kind, NodeKind::Guard { .. });
                format!("{}{}", contract[*d].name, if gate { " (gate)" } else { "" })
            })
            .collect();
        if deps.is_empty() {
            let _ = writeln!(out, "  {what}");
        } else {
            let _ = writeln!(out, "  {what} <- {}", deps.join(", "));
        }
    }
    for output in &contract.outputs {
        let mut path = vec![contract[output.node].name.to_string()];
        path.extend(output.fields.iter().cloned());
        let _ = writeln!(out, "  output {} = {}", output.name, path.join("."));
    }
}

fn call_text(program: &Program, call: &Call) -> String {
    let name = match call.callee {
        Callee::Tool(tool) => &program[tool].name,
        Callee::Agent(agent) => &program[agent].name,
        Callee::Contract(contract) => &program[contract].name,
    };
    let args: Vec<&str> = call.args.iter().map(|(n, _)| n.as_str()).collect();
    format!("{}{name}({})", if call.catch { "try " } else { "" }, args.join(", "))
}

fn body_text(program: &Program, body: &Body) -> String {
    match body {
        Body::Pure(_) => "pure".to_owned(),
        Body::Call(call) => call_text(program, call),
    }
}

/// `syntax/*.ign`: what each construct parses to, one line per node of
/// each contract, expressions as S-expressions.
#[test]
fn syntax() {
    insta::glob!("corpus/syntax/*.ign", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let file = igniter::syntax::parse(igniter::source::FileId(0), &text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e:?}", path.display()));
        let mut out = String::new();
        for item in &file.items {
            if let ast::Item::Provider(provider) = item {
                dump_provider(&text, provider, &mut out);
            }
            if let ast::Item::Tool(tool) = item {
                for approval in &tool.approvals {
                    let when =
                        approval.value.as_ref().map(|e| format!(" when {}", sexpr(&text, e)));
                    let _ = writeln!(
                        out,
                        "tool {} requires_approval{}",
                        tool.name.name,
                        when.unwrap_or_default()
                    );
                }
            }
            if let ast::Item::Eval(eval) = item {
                dump_eval(&text, eval, &mut out);
            }
            let ast::Item::Contract(contract) = item else { continue };
            let _ = writeln!(out, "contract {}", contract.name.name);
            for budget in &contract.budgets {
                let limits: Vec<String> = budget
                    .limits
                    .iter()
                    .map(|l| format!("{} {}", l.kind.keyword().as_str(), sexpr(&text, &l.value)))
                    .collect();
                let _ = writeln!(out, "  budget {}", limits.join(", "));
            }
            for node in &contract.nodes {
                let (kind, expr) = match node {
                    ast::Node::Compute(_, expr, _) => ("compute", expr),
                    ast::Node::Compose(_, expr, _) => ("compose", expr),
                    ast::Node::Guard(guard) => ("guard", &guard.condition),
                    ast::Node::Input(_) => continue,
                };
                let _ = writeln!(out, "  {kind} {} = {}", node.name().name, sexpr(&text, expr));
            }
        }
        insta::assert_snapshot!(out);
    });
}

/// An eval's statements as parsed.
fn dump_eval(text: &str, eval: &ast::Eval, out: &mut String) {
    let _ = writeln!(out, "eval {}", sexpr(text, &eval.name));
    for stmt in &eval.statements {
        let _ = match stmt {
            ast::EvalStmt::Run(contract, _) => writeln!(out, "  run {}", contract.name),
            ast::EvalStmt::Dataset(e, _) => writeln!(out, "  dataset {}", sexpr(text, e)),
            ast::EvalStmt::Repeat(e, _) => writeln!(out, "  repeat {}", sexpr(text, e)),
            ast::EvalStmt::Score { name, value, .. } => {
                writeln!(out, "  score {} = {}", name.name, sexpr(text, value))
            }
            ast::EvalStmt::Require(e, _) => writeln!(out, "  require {}", sexpr(text, e)),
        };
    }
}

/// A provider's limits and price as parsed.
fn dump_provider(text: &str, provider: &ast::Provider, out: &mut String) {
    let _ = writeln!(out, "provider {}", provider.name.name);
    for (what, rates) in
        [("rate_limit", &provider.rate_limits), ("token_limit", &provider.token_limits)]
    {
        for rate in rates {
            let (count, per) = (sexpr(text, &rate.value.count), &rate.value.per.name);
            let _ = writeln!(out, "  {what} {count} per {per}");
        }
    }
    for price in &provider.prices {
        let (input, output) = (sexpr(text, &price.value.input), sexpr(text, &price.value.output));
        let _ = writeln!(out, "  price input {input} output {output}");
    }
}

/// An expression as an S-expression: `(+ a (* b c))`.
fn sexpr(text: &str, expr: &ast::Expr) -> String {
    use ast::ExprKind as E;
    let all =
        |exprs: &[ast::Expr]| exprs.iter().map(|e| sexpr(text, e)).collect::<Vec<_>>().join(" ");
    match &expr.kind {
        E::Null => "null".to_owned(),
        E::Bool(b) => b.to_string(),
        E::Integer(n) => n.to_string(),
        E::Float(x) => format!("{x:?}"),
        E::String(parts) => {
            let parts: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    ast::StringPart::Text(t) => format!("{t:?}"),
                    ast::StringPart::Expr(e) => format!("{{{}}}", sexpr(text, e)),
                })
                .collect();
            parts.join("")
        }
        E::Array(items) => format!("[{}]", all(items)),
        E::Object(entries) => {
            let entries: Vec<String> =
                entries.iter().map(|(k, v)| format!("{}: {}", k.name, sexpr(text, v))).collect();
            format!("{{{}}}", entries.join(", "))
        }
        E::Name => text[expr.span.start as usize..expr.span.end as usize].to_owned(),
        E::Field(field) => format!("(. {} {})", sexpr(text, &field.0), field.1.name),
        E::Index(target, index) => format!("([] {} {})", sexpr(text, target), sexpr(text, index)),
        E::Call(call) => {
            let ast::Call { callee, args } = &**call;
            let args: Vec<String> = args
                .iter()
                .map(|a| match &a.name {
                    Some(name) => format!("{}: {}", name.name, sexpr(text, &a.value)),
                    None => sexpr(text, &a.value),
                })
                .collect();
            format!("(call {} {})", callee.name, args.join(", "))
        }
        E::Unary(op, operand) => format!("({op:?} {})", sexpr(text, operand)),
        E::Binary(op, a, b) => format!("({} {} {})", op.symbol(), sexpr(text, a), sexpr(text, b)),
        E::If(parts) => {
            let (c, a, b) = &**parts;
            format!("(if {} {} {})", sexpr(text, c), sexpr(text, a), sexpr(text, b))
        }
        E::Match(parts) => {
            let (on, arms) = &**parts;
            let arms: Vec<String> = arms
                .iter()
                .map(|arm| {
                    let pattern = match &arm.pattern.kind {
                        ast::PatternKind::Wildcard => "_".to_owned(),
                        ast::PatternKind::Literal(literal) => sexpr(text, literal),
                    };
                    format!("({pattern} => {})", sexpr(text, &arm.body))
                })
                .collect();
            format!("(match {} {})", sexpr(text, on), arms.join(" "))
        }
        E::For(each) => format!(
            "(for {} {}{} {})",
            each.name.name,
            sexpr(text, &each.items),
            each.filter.as_ref().map(|f| format!(" (if {})", sexpr(text, f))).unwrap_or_default(),
            sexpr(text, &each.body)
        ),
        E::Try(call) => format!("(try {})", sexpr(text, call)),
    }
}
