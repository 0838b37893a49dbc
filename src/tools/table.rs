//! [`render_table`]: the tools of a registry as an aligned text table (`ignite tools`).
//!
//! Columns: name, description (first line), params, capabilities, implementation.
//! Empty cells show `-`. Output is deterministic: registry order, no trailing spaces.

use super::Registry;

/// The table of `registry`'s tools, or of those `capabilities` cover.
#[must_use]
pub fn render_table(registry: &Registry, capabilities: Option<&[String]>) -> String {
    let tools = match capabilities {
        Some(held) => registry.tools_for(held),
        None => registry.all().iter().collect(),
    };
    let or_dash = |s: String| if s.is_empty() { "-".to_owned() } else { s };
    let mut rows = vec![
        ["NAME", "DESCRIPTION", "PARAMS", "CAPABILITIES", "IMPLEMENTATION"].map(str::to_owned),
    ];
    for tool in tools {
        rows.push([
            tool.name.clone(),
            or_dash(tool.description.lines().next().unwrap_or_default().trim().to_owned()),
            or_dash(tool.signature.clone()),
            or_dash(tool.capabilities.join(", ")),
            tool.implementation.clone(),
        ]);
    }
    let mut widths = [0usize; 5];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let pad = widths[i] - cell.chars().count();
            line.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::registry::tests::{sample, toolbox};

    #[test]
    fn table_of_all_tools() {
        let registry = Registry::from_program(&sample(), &toolbox());
        insta::assert_snapshot!(render_table(&registry, None));
    }

    #[test]
    fn table_filtered() {
        let registry = Registry::from_program(&sample(), &toolbox());
        let held = vec!["database_read".to_owned()];
        insta::assert_snapshot!(render_table(&registry, Some(&held)));
    }
}
