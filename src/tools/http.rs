//! `http get|post "url"`: a request to a web service.
//!
//! Input: the method, the URL and header expressions (evaluated over the params, so
//! they may interpolate params and call `env("VAR")`), and the filled arguments.
//! A URL hole that reads a param is percent-encoded as one path segment (before the
//! `?`) or one query value (after it), so `../admin` or `1?admin=true#` stay data;
//! holes that read no param (`{env("BASE")}`) are inserted as they are.
//! POST sends the arguments as a JSON body. GET sends them as a query string: strings
//! as they are, numbers and booleans as text, arrays and objects as JSON text, `null`s
//! left out, and params the URL already interpolates left out too.
//! Output: the body as JSON when it parses, else as text. A non-2xx status is a
//! [`ToolError::HttpStatus`] with a body excerpt; the whole exchange is bounded by the
//! tool's time limit.
//!
//! Redirects are followed within the request's origin only (see [`redirect_policy`]):
//! headers such as `x-api-key` or a custom token never travel to another host. The
//! credentials of such headers are redacted from the answer (see [`fetch`]).
//! An approved call's request carries its `Idempotency-Key`
//! ([`IDEMPOTENCY_KEY`]), the same on every resend.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Map, Value};

use super::ToolError;
use crate::eval::{self, push_display};
use crate::ir::{Expr, ExprKind, HttpMethod, Part};

tokio::task_local! {
    /// The `Idempotency-Key` of an approved call (see `effects::approval`),
    /// sent with each of its requests so that a server acts on it once.
    pub(crate) static IDEMPOTENCY_KEY: String;
}

/// Characters of a non-2xx body kept in the error.
const BODY_EXCERPT: usize = 500;

/// What to send.
pub(crate) struct Spec<'a> {
    pub(crate) method: HttpMethod,
    pub(crate) url: &'a Expr,
    pub(crate) headers: &'a [(String, Expr)],
    pub(crate) timeout: Duration,
    /// The size limit of the answer's body.
    pub(crate) max_bytes: usize,
}

/// Sends the request and reads the answer.
pub(crate) async fn run(
    client: &reqwest::Client,
    spec: &Spec<'_>,
    args: Map<String, Value>,
) -> Result<Value, ToolError> {
    let scope: Vec<Value> = args.values().cloned().collect();
    let url = url_of(spec.url, &scope, &args)?;
    let mut request = match spec.method {
        HttpMethod::Get => {
            let in_url = spec.url.vars();
            let query: Vec<(&String, String)> = args
                .iter()
                .enumerate()
                .filter(|(i, (_, v))| !v.is_null() && !in_url.iter().any(|u| *u as usize == *i))
                .map(|(_, (k, v))| (k, query_text(v)))
                .collect();
            client.get(&url).query(&query)
        }
        HttpMethod::Post => client.post(&url).json(&Value::Object(args)),
    };
    let mut secrets = Vec::new();
    for (name, value) in spec.headers {
        let value = text_of(value, &scope, &format!("header `{name}`"))?;
        if is_secret_header(name) {
            secrets.extend(secrets_of(&value));
        }
        request = request.header(name.as_str(), value);
    }
    if let Ok(key) = IDEMPOTENCY_KEY.try_with(Clone::clone) {
        request = request.header("Idempotency-Key", key);
    }
    fetch(request, spec.timeout, spec.max_bytes, &secrets).await
}

/// Whether a header's name says it carries a credential (`Authorization`,
/// `X-Api-Key`, `X-Auth-Token`, `Cookie`, ...).
fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "cookie", "session", "password"]
        .iter()
        .any(|word| name.contains(word))
}

/// What to redact of a secret header's value: the value, and its last word
/// (the credential of `Bearer sk-...`), when long enough to be one.
fn secrets_of(value: &str) -> Vec<String> {
    let last = value.split_whitespace().next_back().unwrap_or_default();
    [value, last].into_iter().filter(|s| s.len() >= 8).map(str::to_owned).collect()
}

/// Sends `request`, bounded by `limit` in time and `max_bytes` in size; JSON or text
/// on 2xx, else an error. `secrets` (the credentials the request's headers carry)
/// are replaced by `***` in the body before anything reads it, so a server echoing
/// one passes it neither to a model nor to an error message.
pub(crate) async fn fetch(
    request: reqwest::RequestBuilder,
    limit: Duration,
    max_bytes: usize,
    secrets: &[String],
) -> Result<Value, ToolError> {
    let exchange = async {
        let response = request.send().await?;
        let status = response.status();
        let location = location(&response);
        let body = read_body(response, max_bytes, "the response body").await?;
        Ok::<_, reqwest::Error>((status, location, body))
    };
    let (status, location, body) = tokio::time::timeout(limit, exchange)
        .await
        .map_err(|_| ToolError::Timeout(limit))?
        .map_err(|e| {
            if e.is_connect() || e.is_timeout() {
                ToolError::Unreachable(describe_error(&e))
            } else {
                ToolError::Failed(describe_error(&e))
            }
        })?;
    let body = secrets.iter().fold(body.map_err(ToolError::Failed)?, |body, secret| {
        body.replace(secret.as_str(), "***")
    });
    if !status.is_success() {
        let body = refused_redirect(status.as_u16(), location.as_deref())
            .unwrap_or_else(|| excerpt(&body));
        return Err(ToolError::HttpStatus { status: status.as_u16(), body });
    }
    Ok(serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

/// Reads a response body, failing once it grows past `limit` bytes (a body
/// that declares a larger `content-length` fails before any is read).
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
    what: &str,
) -> Result<Result<String, String>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(Err(super::too_big(what, limit)));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(Err(super::too_big(what, limit)));
        }
        body.extend_from_slice(&chunk);
    }
    // The pool takes an HTTP/1 connection back in a task of its own, woken
    // as the body ends. Yield once so that it runs: a caller that sends
    // its next request without waiting on anything first (an agent's next
    // turn) would otherwise find no idle connection and open another.
    tokio::task::yield_now().await;
    Ok(Ok(String::from_utf8_lossy(&body).into_owned()))
}

/// Which redirects within the origin [`redirect_policy`] follows.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Follow {
    /// Any (a 301, 302 or 303 after a POST is followed with a GET).
    Any,
    /// Only 307 and 308, which send the request again as it was: an MCP
    /// message is a POST that must reach the server (rmcp's own choice).
    SameRequest,
}

/// Redirects followed: at most 10, all within the origin (scheme, host, port)
/// of the first request, and only those of `follow`. A redirect elsewhere is
/// not followed, so headers carrying secrets never reach another host; the
/// 3xx answer is returned and [`refused_redirect`] words it.
pub(crate) fn redirect_policy(follow: Follow) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let same_origin =
            attempt.previous().first().is_none_or(|first| first.origin() == attempt.url().origin());
        let same_request = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        if !same_origin || (matches!(follow, Follow::SameRequest) && !same_request) {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}

/// The `location` header of a response.
pub(crate) fn location(response: &reqwest::Response) -> Option<String> {
    let value = response.headers().get(reqwest::header::LOCATION)?;
    value.to_str().ok().map(str::to_owned)
}

/// What to say of a redirect [`redirect_policy`] did not follow (a 3xx
/// answer with a `location`), in place of its body.
pub(crate) fn refused_redirect(status: u16, location: Option<&str>) -> Option<String> {
    let location = location.filter(|_| (300..400).contains(&status))?;
    Some(format!(
        "redirect to `{location}` not followed: it leaves the origin of the request, whose \
         headers may carry secrets"
    ))
}

/// The URL of a call: see the module docs for how holes are encoded.
fn url_of(expr: &Expr, scope: &[Value], args: &Map<String, Value>) -> Result<String, ToolError> {
    let ExprKind::Interpolate(parts) = &expr.kind else {
        return text_of(expr, scope, "the url");
    };
    let mut url = String::new();
    for part in parts {
        match part {
            Part::Text(text) => url.push_str(text),
            Part::Expr(hole) if hole.vars().is_empty() => {
                url.push_str(&text_of(hole, scope, "the url")?);
            }
            Part::Expr(hole) => {
                let value = text_of(hole, scope, "the url")?;
                if !url.contains('?') && (value == "." || value == "..") {
                    let name = match hole.kind {
                        ExprKind::Var(v) => args.keys().nth(v as usize).map(String::as_str),
                        _ => None,
                    };
                    return Err(ToolError::Failed(format!(
                        "the url: `{value}`{} cannot be a path segment",
                        name.map(|n| format!(" (param `{n}`)")).unwrap_or_default()
                    )));
                }
                percent_encode(&mut url, &value);
            }
        }
    }
    Ok(url)
}

/// Appends `text` with every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`)
/// as `%XX`: valid as one path segment and as one query value.
fn percent_encode(out: &mut String, text: &str) {
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
}

fn text_of(expr: &Expr, scope: &[Value], what: &str) -> Result<String, ToolError> {
    if expr.vars().iter().any(|v| *v as usize >= scope.len()) {
        return Err(ToolError::Failed(format!("{what} reads a param the tool lacks")));
    }
    let value = eval::eval_json(expr, scope)
        .map_err(|e| ToolError::Failed(format!("cannot build {what}: {}", e.message)))?;
    let mut out = String::new();
    push_display(&mut out, &value);
    Ok(out)
}

fn query_text(value: &Value) -> String {
    let mut out = String::new();
    push_display(&mut out, value);
    out
}

fn excerpt(body: &str) -> String {
    let body = body.trim();
    if body.chars().count() <= BODY_EXCERPT {
        return body.to_owned();
    }
    body.chars().take(BODY_EXCERPT).collect::<String>() + "..."
}

/// reqwest's message plus its causes ("error sending request: connection refused").
fn describe_error(error: &reqwest::Error) -> String {
    format!("http request failed: {error}{}", causes(error))
}

/// The chain of causes under `error`, each after `": "` (empty when none).
pub(crate) fn causes(error: &dyn std::error::Error) -> String {
    let mut text = String::new();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};
    use wiremock::matchers::{body_json, header, method, path, query_param};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use crate::ir::{self, Function, HttpMethod, Implementation};
    use crate::tools::test_support::{expr, hole, lit, program, template, text, tool_with};
    use crate::tools::{ToolError, Toolbox};

    fn http(method: HttpMethod, url: ir::Expr, headers: Vec<(String, ir::Expr)>) -> Implementation {
        Implementation::Http { method, url, headers }
    }

    /// An `http get` tool of no params at a fixed `url`.
    fn get_tool(url: impl Into<String>) -> ir::Tool {
        let url = lit(json!(url.into()));
        tool_with("Get", &[], http(HttpMethod::Get, url, vec![]), std::path::Path::new("."))
    }

    async fn call(t: ir::Tool, args: Value) -> Result<Value, ToolError> {
        let p = program(vec![t]);
        Toolbox::new().call(&p, ir::ToolId(0), args).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn get_sends_query_and_interpolates_url() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/products/A-1"))
            .and(query_param("limit", "5"))
            .and(query_param("tags", r#"["a","b"]"#))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"sku": "A-1"})))
            .expect(1)
            .mount(&server)
            .await;
        let url = template(vec![text(&format!("{}/products/", server.uri())), hole(0)]);
        let t = tool_with(
            "Get",
            &[("sku", "string"), ("limit", "integer"), ("tags", "array<string>"), ("x", "string?")],
            http(HttpMethod::Get, url, vec![]),
            std::path::Path::new("."),
        );
        let out = call(t, json!({"sku": "A-1", "limit": 5, "tags": ["a", "b"]})).await;
        assert_eq!(out, Ok(json!({"sku": "A-1"})));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn post_sends_json_and_headers_with_env() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/orders"))
            .and(header("authorization", "Bearer fallback"))
            .and(header("x-path", std::env::var("PATH").unwrap().as_str()))
            .and(body_json(json!({"sku": "A-1", "qty": 2})))
            .respond_with(ResponseTemplate::new(201).set_body_string("created"))
            .expect(1)
            .mount(&server)
            .await;
        let env = expr(ir::ExprKind::Call(
            Function::Env,
            [lit(json!("IGNITE_TOOLS_TEST_UNSET_VAR")), lit(json!("fallback"))].into(),
        ));
        let path_env = expr(ir::ExprKind::Call(Function::Env, [lit(json!("PATH"))].into()));
        let auth = template(vec![text("Bearer "), ir::Part::Expr(env)]);
        let t = tool_with(
            "Post",
            &[("sku", "string"), ("qty", "integer")],
            http(
                HttpMethod::Post,
                lit(json!(format!("{}/orders", server.uri()))),
                vec![("Authorization".into(), auth), ("X-Path".into(), path_env)],
            ),
            std::path::Path::new("."),
        );
        assert_eq!(call(t, json!({"sku": "A-1", "qty": 2})).await, Ok(json!("created")));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn non_2xx_is_an_error_with_excerpt() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(404).set_body_string("no such product\n"))
            .mount(&server)
            .await;
        let t = get_tool(server.uri());
        let err = call(t, json!({})).await.unwrap_err();
        assert_eq!(err, ToolError::HttpStatus { status: 404, body: "no such product".into() });
        assert_eq!(err.to_string(), "http status 404: no such product");
    }

    /// A URL hole reading a param is one path segment or one query value,
    /// whatever it holds; `.` and `..` cannot be segments.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn url_holes_are_encoded() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
            .mount(&server)
            .await;
        let url = template(vec![
            text(&format!("{}/items/", server.uri())),
            hole(0),
            text("/detail?q="),
            hole(1),
        ]);
        let get = |url: ir::Expr| {
            let params = [("id", "string"), ("q", "string")];
            tool_with("Get", &params, http(HttpMethod::Get, url, vec![]), std::path::Path::new("."))
        };
        for (id, q, expected) in [
            ("../../admin", "x", "/items/..%2F..%2Fadmin/detail?q=x"),
            (
                "1?admin=true#",
                "a&b=c d/é",
                "/items/1%3Fadmin%3Dtrue%23/detail?q=a%26b%3Dc%20d%2F%C3%A9",
            ),
            ("A-1_b.c~", "..", "/items/A-1_b.c~/detail?q=.."),
        ] {
            assert_eq!(call(get(url.clone()), json!({"id": id, "q": q})).await, Ok(json!("ok")));
            let requests = server.received_requests().await.unwrap();
            let sent = requests.last().unwrap();
            let sent = format!("{}?{}", sent.url.path(), sent.url.query().unwrap_or_default());
            assert_eq!(sent, expected);
        }
        let err = call(get(url), json!({"id": "..", "q": "x"})).await.unwrap_err();
        assert_eq!(err.to_string(), "the url: `..` (param `id`) cannot be a path segment");
    }

    /// Credentials a server echoes from the request's secret headers are
    /// redacted before the body is read, in answers and in error excerpts
    /// (even one that would cut the credential in two).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn echoed_header_credentials_are_redacted() {
        let server = MockServer::start().await;
        let token = "tok-0123456789";
        Mock::given(path("/ok"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"you sent": token})))
            .mount(&server)
            .await;
        let long = format!("{}{token}", "x".repeat(495));
        Mock::given(path("/denied"))
            .respond_with(ResponseTemplate::new(401).set_body_string(long))
            .mount(&server)
            .await;
        let tool = |to: &str| {
            let headers = vec![
                ("Authorization".into(), lit(json!(format!("Bearer {token}")))),
                ("Accept".into(), lit(json!("application/json"))),
            ];
            let url = lit(json!(format!("{}{to}", server.uri())));
            tool_with("Get", &[], http(HttpMethod::Get, url, headers), std::path::Path::new("."))
        };
        assert_eq!(call(tool("/ok"), json!({})).await, Ok(json!({"you sent": "***"})));
        let err = call(tool("/denied"), json!({})).await.unwrap_err().to_string();
        assert!(err.ends_with("xxx***"), "{err}");
        assert!(super::is_secret_header("X-Api-Key") && !super::is_secret_header("Accept"));
    }

    /// A body over the size limit fails the call, for `http` tools and `http.get`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn body_over_the_limit_fails() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(1001)))
            .mount(&server)
            .await;
        let t = get_tool(server.uri());
        let toolbox = Toolbox::new().with_max_bytes(1000);
        let err = toolbox.call(&program(vec![t]), ir::ToolId(0), json!({})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "the response body is larger than the size limit of 1000 bytes; raise it with \
             `--max-bytes`"
        );
        let ok = Toolbox::new().with_max_bytes(1001);
        let t = get_tool(server.uri());
        assert!(ok.call(&program(vec![t]), ir::ToolId(0), json!({})).await.is_ok());
    }

    /// A redirect within the origin is followed with the headers; one to
    /// another host is not, so the header never reaches it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redirects_stay_within_the_origin() {
        let (server, other) = (MockServer::start().await, MockServer::start().await);
        let moved = |to: String| ResponseTemplate::new(307).insert_header("location", to);
        Mock::given(path("/old")).respond_with(moved("/new".into())).mount(&server).await;
        Mock::given(path("/away"))
            .respond_with(moved(format!("{}/steal", other.uri())))
            .mount(&server)
            .await;
        Mock::given(path("/new"))
            .and(header("x-api-key", "secret-123"))
            .respond_with(ResponseTemplate::new(200).set_body_string("moved here"))
            .mount(&server)
            .await;
        Mock::given(path("/steal"))
            .respond_with(ResponseTemplate::new(200))
            .expect(0)
            .mount(&other)
            .await;
        for (to, expected) in [
            ("/old", Ok(json!("moved here"))),
            (
                "/away",
                Err(ToolError::HttpStatus {
                    status: 307,
                    body: format!(
                        "redirect to `{}/steal` not followed: it leaves the origin of the \
                         request, whose headers may carry secrets",
                        other.uri()
                    ),
                }),
            ),
        ] {
            let t = tool_with(
                "Get",
                &[],
                http(
                    HttpMethod::Get,
                    lit(json!(format!("{}{to}", server.uri()))),
                    vec![("x-api-key".into(), lit(json!("secret-123")))],
                ),
                std::path::Path::new("."),
            );
            assert_eq!(call(t, json!({})).await, expected, "{to}");
        }
    }

    /// MCP's redirects: a 307 is followed with the same request, a 302
    /// (which would send the message's POST again as a GET) is not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn same_request_redirects_follow_only_307_and_308() {
        let server = MockServer::start().await;
        let moved = |status| ResponseTemplate::new(status).insert_header("location", "/here");
        Mock::given(path("/found")).respond_with(moved(302)).mount(&server).await;
        Mock::given(path("/temporary")).respond_with(moved(307)).mount(&server).await;
        Mock::given(method("POST"))
            .and(path("/here"))
            .and(body_json(json!({"id": 1})))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        let client = crate::http_client::builder()
            .redirect(super::redirect_policy(super::Follow::SameRequest))
            .build()
            .unwrap();
        for (from, status) in [("/found", 302), ("/temporary", 200)] {
            let sent = client.post(format!("{}{from}", server.uri())).json(&json!({"id": 1}));
            assert_eq!(sent.send().await.unwrap().status().as_u16(), status, "{from}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_server_times_out() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(3)))
            .mount(&server)
            .await;
        let mut t = get_tool(server.uri());
        t.timeout = Some(Duration::from_millis(200));
        assert_eq!(call(t, json!({})).await, Err(ToolError::Timeout(Duration::from_millis(200))));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connection_refused_is_a_failure() {
        let t = get_tool("http://127.0.0.1:9/");
        let err = call(t, json!({})).await.unwrap_err();
        assert!(err.to_string().starts_with("http request failed"), "{err}");
    }
}
