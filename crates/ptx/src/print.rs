//! Printing a [`Module`] back to PTX text, in NVRTC's layout (tabs, one statement a line).
//!
//! The output is meant for ptxas and for reading; it is not byte-identical to the input
//! (comments are gone, spacing is normalised), but it parses back to an equal module.

use crate::model::*;
use std::fmt::{self, Display, Write};

impl Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for item in &self.items {
            match item {
                Item::Version(v) => writeln!(f, ".version {v}")?,
                Item::Target(t) => writeln!(f, ".target {}", t.join(", "))?,
                Item::AddressSize(n) => writeln!(f, ".address_size {n}\n")?,
                Item::File {
                    index, path, rest, ..
                } => {
                    write!(f, "\t.file\t{index} \"{path}\"")?;
                    if !rest.is_empty() {
                        write!(f, " {rest}")?;
                    }
                    writeln!(f)?;
                }
                Item::Var(v) => writeln!(f, "{v};")?,
                Item::Function(func) => writeln!(f, "{func}")?,
                Item::Section { name, body, .. } => {
                    writeln!(f, "\t.section\t{name}\n\t{{{body}}}")?
                }
                Item::Verbatim(v) => writeln!(f, "{}", v.text)?,
            }
        }
        Ok(())
    }
}

fn params(f: &mut fmt::Formatter<'_>, ps: &[Param]) -> fmt::Result {
    f.write_str("(\n")?;
    for (k, p) in ps.iter().enumerate() {
        write!(f, "\t{}", p.attrs.join(" "))?;
        write!(f, " {}", p.name)?;
        dims(f, &p.dims)?;
        f.write_str(if k + 1 < ps.len() { ",\n" } else { "\n" })?;
    }
    f.write_str(")")
}

fn dims(f: &mut impl Write, ds: &[Option<u64>]) -> fmt::Result {
    for d in ds {
        match d {
            Some(n) => write!(f, "[{n}]")?,
            None => f.write_str("[]")?,
        }
    }
    Ok(())
}

impl Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in &self.linkage {
            write!(f, "{l} ")?;
        }
        f.write_str(match self.kind {
            FunctionKind::Entry => ".entry ",
            FunctionKind::Func => ".func ",
        })?;
        if let Some(r) = &self.returns {
            params(f, r)?;
            f.write_str(" ")?;
        }
        f.write_str(&self.name)?;
        params(f, &self.params)?;
        for d in &self.directives {
            write!(f, "\n{d}")?;
        }
        let Some(body) = &self.body else {
            return f.write_str(";");
        };
        f.write_str("\n{\n")?;
        for s in body {
            writeln!(f, "{s}")?;
        }
        f.write_str("}\n")
    }
}

impl Display for VarDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.attrs.join(" "), self.name)?;
        dims(f, &self.dims)?;
        if let Some(init) = &self.init {
            write!(f, " = {init}")?;
        }
        Ok(())
    }
}

impl Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Reg(d) => {
                write!(f, "\t.reg {} \t", d.ty)?;
                for (k, n) in d.names.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    match n {
                        RegName::Range { prefix, count } => write!(f, "{prefix}<{count}>")?,
                        RegName::Single(s) => f.write_str(s)?,
                    }
                }
                f.write_str(";")
            }
            Statement::Var(v) => write!(f, "\t{v};"),
            Statement::Label(l, _) => write!(f, "{l}:"),
            Statement::Inst(i) => write!(f, "\t{i}"),
            Statement::Loc(l) => write!(f, "\t{l}"),
            Statement::Pragma(p, _) => write!(f, "\t.pragma {};", p.join(", ")),
            Statement::BlockStart(_) => f.write_str("\t{"),
            Statement::BlockEnd(_) => f.write_str("\t}"),
            Statement::Verbatim(v) => f.write_str(&v.text),
        }
    }
}

impl Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".loc\t{} {} {}", self.file, self.line, self.col)?;
        if let Some(i) = &self.inlined {
            write!(
                f,
                ", function_name {}, inlined_at {} {} {}",
                i.function_name, i.file, i.line, i.col
            )?;
        }
        Ok(())
    }
}

impl Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = &self.guard {
            write!(f, "@{}{} ", if g.negated { "!" } else { "" }, g.reg)?;
        }
        f.write_str(&self.full_opcode())?;
        for (k, op) in self.operands.iter().enumerate() {
            f.write_str(if k == 0 { " \t" } else { ", " })?;
            write!(f, "{op}")?;
        }
        f.write_str(";")
    }
}

fn list(f: &mut fmt::Formatter<'_>, open: &str, ops: &[Operand], close: &str) -> fmt::Result {
    f.write_str(open)?;
    for (k, o) in ops.iter().enumerate() {
        if k > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{o}")?;
    }
    f.write_str(close)
}

impl Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Reg(r) | Operand::Symbol(r) | Operand::Raw(r) => f.write_str(r),
            Operand::Imm(i) => write!(f, "{i}"),
            Operand::Addr { base, offset: 0 } => write!(f, "[{base}]"),
            Operand::Addr { base, offset } if *offset < 0 => write!(f, "[{base}+{offset}]"),
            Operand::Addr { base, offset } => write!(f, "[{base}+{offset}]"),
            Operand::Vector(v) => list(f, "{", v, "}"),
            Operand::List(v) => list(f, "(", v, ")"),
            Operand::Not(o) => write!(f, "!{o}"),
        }
    }
}

impl Display for Imm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Imm::F32(b) => write!(f, "0f{b:08X}"),
            Imm::F64(b) => write!(f, "0d{b:016X}"),
            Imm::Int {
                value,
                hex,
                unsigned,
            } => {
                let u = if unsigned { "U" } else { "" };
                match (hex, value < 0) {
                    (true, true) => write!(f, "-0x{:X}{u}", value.unsigned_abs()),
                    (true, false) => write!(f, "0x{value:X}{u}"),
                    (false, _) => write!(f, "{value}{u}"),
                }
            }
        }
    }
}
