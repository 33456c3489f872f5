//! The outlier layout of `analyze`, `migrate`, `verify` and `indexes outlier`.

use pattern_core::spec::{Keeps, OutlierSpec, SeriesOrder, SeriesSpec};

use super::distinct;
use crate::args::OutlierLayout;
use crate::exit::Failure;

/// An outlier layout's arguments and the names derived from them, checked: no two roles of a
/// main document or of an overflow chunk share a field. [`OutlierNames::spec`] borrows them.
pub(crate) struct OutlierNames<'a> {
    layout: &'a OutlierLayout,
    /// `--owner`, or `<collection>_id`.
    owner: String,
    /// `--extra`, or `<array>_extra`.
    extra: String,
}

impl<'a> OutlierNames<'a> {
    /// `--owner` defaults to `<collection>_id` (the derive's is `<struct name in snake
    /// case>_id`, and there is no struct), `--extra` to `<array>_extra`.
    pub(crate) fn new(l: &'a OutlierLayout) -> Result<Self, Failure> {
        let owner = l
            .owner
            .clone()
            .unwrap_or_else(|| format!("{}_id", l.collection));
        let extra = l
            .extra
            .clone()
            .unwrap_or_else(|| format!("{}_extra", l.array));
        let main = [("the array", &l.array), ("the flag", &l.flag)];
        distinct(
            &[("_id", &"_id".to_owned()), main[0], main[1]],
            "main document",
        )?;
        distinct(
            &[
                ("_id", &"_id".to_owned()),
                ("the owner", &owner),
                ("the extra array", &extra),
                ("the chunk count", &l.chunk_count),
                ("the chunk number", &l.seq),
            ],
            "overflow chunk",
        )?;
        Ok(OutlierNames {
            layout: l,
            owner,
            extra,
        })
    }

    /// The outlier spec the derive would build from the same attributes, with its overflow
    /// chunks in `overflow`.
    pub(crate) fn spec<'s>(&'s self, threshold: u32, overflow: &'s str) -> OutlierSpec<'s> {
        let l = self.layout;
        OutlierSpec {
            collection: &l.collection,
            items_field: &l.array,
            threshold,
            flag_field: &l.flag,
            overflow: SeriesSpec {
                collection: overflow,
                key_field: &self.owner,
                items_field: &self.extra,
                count_field: &l.chunk_count,
                size: l.chunk,
                order: SeriesOrder::Seq(&l.seq),
                keeps: Keeps::NONE,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command, Verify};
    use clap::Parser;

    #[test]
    fn outlier_defaults_follow_the_derive() {
        let cli = Cli::try_parse_from([
            "pattern",
            "verify",
            "outlier",
            "--collection",
            "books",
            "--array",
            "customers_purchased",
            "--threshold",
            "50",
            "--overflow",
            "extra_books",
        ])
        .unwrap();
        let Command::Verify(Verify::Outlier(a)) = cli.command else {
            panic!("parsed as another command")
        };
        let names = OutlierNames::new(&a.layout).unwrap();
        let spec = names.spec(a.threshold, &a.overflow);
        assert_eq!(spec.flag_field, "has_extras");
        assert_eq!(spec.overflow.key_field, "books_id");
        assert_eq!(spec.overflow.items_field, "customers_purchased_extra");
        assert_eq!(spec.overflow.size, pattern_core::outlier::DEFAULT_CHUNK);
        assert_eq!(spec.overflow.count_field, "count");
        assert_eq!(spec.overflow.order, SeriesOrder::Seq("seq"));
    }
}
