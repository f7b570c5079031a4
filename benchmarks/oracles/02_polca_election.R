source("/tmp/oracles/common.R")
sink("/tmp/oracles/02_polca_election.out", split = TRUE)
cat("poLCA version:", as.character(packageVersion("poLCA")), "  R:", R.version.string, "\n")
data(election)
items <- c("MORALG","CARESG","KNOWG","LEADG","DISHONG","INTELG","MORALB","CARESB","KNOWB","LEADB","DISHONB","INTELB")
cat("rows:", nrow(election), " rows with PARTY missing:", sum(is.na(election$PARTY)),
    " rows with all 12 items missing:", sum(rowSums(is.na(election[, items])) == 12),
    " rows with all 12 items missing among PARTY-observed rows:",
    sum(rowSums(is.na(election[!is.na(election$PARTY), items])) == 12),
    " fully observed rows (items) among PARTY-observed:",
    sum(rowSums(is.na(election[!is.na(election$PARTY), items])) == 0), "\n")
res <- list()
f2 <- cbind(MORALG,CARESG,KNOWG,LEADG,DISHONG,INTELG,MORALB,CARESB,KNOWB,LEADB,DISHONB,INTELB) ~ PARTY
set.seed(20240602)
t0 <- proc.time()
fitA <- poLCA(f2, election, nclass = 3, maxiter = 5000, tol = 1e-10, na.rm = FALSE, nrep = 50, verbose = TRUE)
tA <- proc.time() - t0
at <- attempts_summary(fitA)
cat("\nwall time nrep=50 (s):", tA[["elapsed"]], "\n")
cat("best llik over 50 restarts:", sprintf("%.12f", at$best), " restarts within 1e-6 of best:", at$n_within_1e_6_of_best,
    " within 1e-3:", at$n_within_1e_3_of_best, "\n")
cat("all attempt lliks (sorted):\n"); print(sort(at$attempts, decreasing = TRUE), digits = 12)
cat("\n==== canonical refit (classes ordered by decreasing share) ====\n")
canA <- canonical(fitA, f2, election, 3, FALSE, 5000, 1e-10)
print_fit(canA, "election K=3 ~ PARTY, na.rm=FALSE (canonical order)")
res$election_party <- fit_summary(canA, "election K=3 ~ PARTY, na.rm=FALSE",
   list(rows_total = nrow(election), rows_dropped_missing_PARTY = nrow(election) - canA$N,
        restarts = at, wall_time_nrep50_s = tA[["elapsed"]],
        class_order = "classes sorted by decreasing P; coeff column r-1 = log(P(class r)/P(class 1))",
        raw_best_fit_P = fitA$P, raw_best_fit_llik = fitA$llik))
## extra: no covariate, all 1785 rows
f0 <- cbind(MORALG,CARESG,KNOWG,LEADG,DISHONG,INTELG,MORALB,CARESB,KNOWB,LEADB,DISHONB,INTELB) ~ 1
set.seed(20240603)
fitB <- poLCA(f0, election, nclass = 3, maxiter = 5000, tol = 1e-10, na.rm = FALSE, nrep = 50, verbose = FALSE)
at <- attempts_summary(fitB)
cat("\n[~1] best llik over 50 restarts:", sprintf("%.12f", at$best), " restarts within 1e-6 of best:", at$n_within_1e_6_of_best, "\n")
canB <- canonical(fitB, f0, election, 3, FALSE, 5000, 1e-10)
print_fit(canB, "election K=3 ~ 1, na.rm=FALSE, all 1785 rows (canonical order)")
res$election_nocov <- fit_summary(canB, "election K=3 ~ 1, na.rm=FALSE (all 1785 rows)",
   list(rows_total = nrow(election), restarts = at))
sink()
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE, na = "null"),
           "/tmp/oracles/02_polca_election.json")
