.libPaths(c("/tmp/oracles/Rlib", .libPaths()))
suppressMessages({library(poLCA); library(glca)})
options(digits = 12)
D <- "/work/shared/data/"
cmp <- function(name, pkgdf, csv) {
  cat("=====", name, "=====\n")
  cat("package dims:", dim(pkgdf), " csv dims:", dim(csv), "\n")
  cat("names equal:", identical(names(pkgdf), names(csv)), "\n")
  for (v in names(pkgdf)) {
    p <- pkgdf[[v]]; c <- csv[[v]]
    cls <- paste(class(p), collapse = "/")
    pc <- if (is.factor(p)) as.character(p) else p
    cc <- if (is.factor(c)) as.character(c) else c
    same <- isTRUE(all.equal(pc, cc, check.attributes = FALSE))
    nas <- identical(is.na(pc), is.na(cc))
    cat(sprintf("  %-9s pkgclass=%-10s equal(values as char/num)=%s  NA-pattern-equal=%s  NAs=%d",
                v, cls, same, nas, sum(is.na(pc))))
    if (is.factor(p)) cat("  levels:", paste(levels(p), collapse = " | "),
                          " integer codes=", paste(sort(unique(as.integer(p))), collapse=","))
    cat("\n")
  }
}
data(cheating); data(election); data(gss08)
ch <- read.csv(paste0(D, "cheating.csv"))
el <- read.csv(paste0(D, "election.csv"))
gs <- read.csv(paste0(D, "gss08.csv"))
cmp("cheating", cheating, ch)
cmp("election", election, el)
cmp("gss08", gss08, gs)
# Check election factor codes vs labels: does the label's leading digit equal the factor integer code?
cat("\nelection: factor integer code == leading digit of label (all 12 items):",
    all(sapply(names(election)[1:12], function(v) {
      p <- election[[v]]; ok <- !is.na(p)
      all(as.integer(p)[ok] == as.integer(substr(as.character(p)[ok], 1, 1)))
    })), "\n")
cat("gss08 factor levels of items:", levels(gss08$DEFECT), " (code 1 = first level)\n")
cat("gss08 DEGREE levels (group order):", levels(gss08$DEGREE), "\n")
cat("gss08 SEX levels:", levels(gss08$SEX), "\n")
cat("rows with all 6 gss08 items NA:", sum(rowSums(is.na(gss08[,1:6])) == 6), "\n")
str(gss08)
str(election)
str(cheating)
