source("/tmp/oracles/common.R")
sink("/tmp/oracles/01_polca_cheating.out", split = TRUE)
cat("poLCA version:", as.character(packageVersion("poLCA")), "  R:", R.version.string, "\n")
data(cheating)
cat("rows:", nrow(cheating), " rows with GPA missing:", sum(is.na(cheating$GPA)), "\n")
set.seed(20240601)
res <- list()
## (1a) with covariate GPA
f1 <- cbind(LIEEXAM, LIEPAPER, FRAUD, COPYEXAM) ~ GPA
fitA <- poLCA(f1, cheating, nclass = 2, maxiter = 5000, tol = 1e-10, nrep = 50, verbose = TRUE)
at <- attempts_summary(fitA)
cat("\nbest llik over 50 restarts:", sprintf("%.12f", at$best), " restarts within 1e-6 of best:", at$n_within_1e_6_of_best, "\n")
cat("\n==== canonical refit (classes ordered by decreasing share) ====\n")
canA <- canonical(fitA, f1, cheating, 2, TRUE, 5000, 1e-10)
print_fit(canA, "cheating K=2 ~ GPA (canonical order)")
res$cheating_gpa <- fit_summary(canA, "cheating K=2 ~ GPA",
   list(rows_total = nrow(cheating), rows_dropped_missing_GPA = nrow(cheating) - canA$N,
        restarts = at, class_order = "classes sorted by decreasing P; coeff column r-1 = log(P(class r)/P(class 1)) as function of covariates",
        raw_best_fit_P = fitA$P, raw_best_fit_llik = fitA$llik))
## (1b) no covariate
f0 <- cbind(LIEEXAM, LIEPAPER, FRAUD, COPYEXAM) ~ 1
fitB <- poLCA(f0, cheating, nclass = 2, maxiter = 5000, tol = 1e-10, nrep = 50, verbose = TRUE)
at <- attempts_summary(fitB)
cat("\nbest llik over 50 restarts:", sprintf("%.12f", at$best), " restarts within 1e-6 of best:", at$n_within_1e_6_of_best, "\n")
canB <- canonical(fitB, f0, cheating, 2, TRUE, 5000, 1e-10)
print_fit(canB, "cheating K=2 ~ 1 (canonical order; all 319 rows)")
res$cheating_nocov <- fit_summary(canB, "cheating K=2 ~ 1 (all 319 rows)",
   list(rows_total = nrow(cheating), restarts = at))
## (1c) no covariate on the same 315 rows as the covariate model (for a likelihood comparison)
ch315 <- cheating[!is.na(cheating$GPA), ]
fitC <- poLCA(f0, ch315, nclass = 2, maxiter = 5000, tol = 1e-10, nrep = 50, verbose = FALSE)
at <- attempts_summary(fitC)
canC <- canonical(fitC, f0, ch315, 2, TRUE, 5000, 1e-10)
print_fit(canC, "cheating K=2 ~ 1 on the 315 rows with GPA observed (canonical order)")
res$cheating_nocov_315 <- fit_summary(canC, "cheating K=2 ~ 1 (315 rows with GPA observed)",
   list(rows_total = nrow(ch315), restarts = at))
sink()
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE, na = "null"),
           "/tmp/oracles/01_polca_cheating.json")
