//! The capability guard: may this agent call this tool?
//!
//! Input: the capabilities a tool requires and those an agent holds. Output: `Ok` or a
//! [`CapabilityError`] listing every missing capability. Only the agent tool-use loop
//! runs the guard; a contract that calls a tool directly is trusted.

use crate::ir;

pub use crate::failure::CapabilityError;

/// Checks that `agent`, holding `held`, may call `tool`.
///
/// # Errors
/// When a capability the tool requires is not in `held`; the error lists all of them.
pub fn check_capabilities(
    tool: &ir::Tool,
    agent: &str,
    held: &[String],
) -> Result<(), CapabilityError> {
    check_required(&tool.tool_name, &tool.capabilities, agent, held)
}

/// [`check_capabilities`] for any tool given its name and required capabilities.
///
/// # Errors
/// When a capability in `required` is not in `held`.
pub(crate) fn check_required(
    tool: &str,
    required: &[String],
    agent: &str,
    held: &[String],
) -> Result<(), CapabilityError> {
    let missing: Vec<String> = required.iter().filter(|c| !held.contains(c)).cloned().collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(CapabilityError {
        tool: tool.to_owned(),
        agent: agent.to_owned(),
        missing,
        held: held.to_vec(),
    })
}

/// True when `held` covers every capability in `required`.
pub(crate) fn covers(required: &[String], held: &[String]) -> bool {
    required.iter().all(|c| held.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::tool;

    fn send_email() -> ir::Tool {
        let mut t = tool("SendEmail", "Send an email");
        t.capabilities = vec!["email_send".into()];
        t
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn held_passes() {
        let held = strings(&["database_read", "email_send"]);
        assert_eq!(check_capabilities(&send_email(), "Support", &held), Ok(()));
    }

    #[test]
    fn no_requirement_always_passes() {
        assert_eq!(check_capabilities(&tool("Calculator", "x"), "Support", &[]), Ok(()));
    }

    #[test]
    fn missing_one() {
        let err =
            check_capabilities(&send_email(), "Support", &strings(&["database_read"])).unwrap_err();
        assert_eq!(err.missing, ["email_send"]);
        assert_eq!(
            err.to_string(),
            "tool `send_email` requires capability `email_send`, which agent `Support` does not \
             hold (it holds `database_read`)"
        );
    }

    #[test]
    fn missing_several_holding_none() {
        let mut t = send_email();
        t.capabilities.push("crm_write".into());
        let err = check_capabilities(&t, "Bot", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `send_email` requires capabilities `email_send`, `crm_write`, which agent `Bot` \
             does not hold (it holds none)"
        );
    }
}
