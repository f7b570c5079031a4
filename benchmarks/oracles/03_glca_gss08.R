.libPaths(c("/tmp/oracles/Rlib", .libPaths()))
suppressMessages({library(glca); library(jsonlite)})
options(digits = 12)
sink("/tmp/oracles/03_glca_gss08.out", split = TRUE)
cat("glca version:", as.character(packageVersion("glca")), "  R:", R.version.string, "\n")
data(gss08)
items <- c("DEFECT","HLTH","RAPE","POOR","SINGLE","NOMORE")
cat("rows:", nrow(gss08), " rows with all 6 items missing:", sum(rowSums(is.na(gss08[, items])) == 6),
    " rows with >=1 item missing:", sum(rowSums(is.na(gss08[, items])) > 0), "\n")
cat("DEGREE levels (group order):", levels(gss08$DEGREE), "\n")
cat("group sizes after dropping all-missing rows:\n"); print(table(gss08$DEGREE[rowSums(is.na(gss08[, items])) < 6]))

f0 <- item(DEFECT, HLTH, RAPE, POOR, SINGLE, NOMORE) ~ 1
fS <- item(DEFECT, HLTH, RAPE, POOR, SINGLE, NOMORE) ~ SEX
EPS <- 1e-10; MAXIT <- 20000

# Run glca `nrun` times (different seeds), each with n.init random starts; keep the best.
best_of <- function(formula, nrun, ..., seed0 = 1000) {
  fits <- list(); ll <- numeric(nrun)
  for (i in seq_len(nrun)) {
    fits[[i]] <- glca(formula, group = DEGREE, data = gss08, nclass = 3, ..., seed = seed0 + i,
                      maxiter = MAXIT, eps = EPS, verbose = FALSE)
    ll[i] <- fits[[i]]$gof$loglik
  }
  b <- which.max(ll)
  list(fit = fits[[b]], lliks = ll, best_seed = seed0 + b)
}

pr <- function(fit, label) {
  cat("\n################", label, "################\n")
  g <- fit$gof
  cat(sprintf("loglik = %.12f\nnpar = %d\ndf = %d\nGsq = %.12f\nAIC = %.12f\nBIC = %.12f\nentropy = %.12f\n",
              g$loglik, as.integer(fit$model$npar), as.integer(g$df), g$Gsq, g$AIC, g$BIC, g$entropy))
  cat("N used =", fit$model$N, " Ng =", fit$model$Ng, " converged =", fit$convergence$converged,
      " niter =", fit$convergence$niter, "\n")
  cat("--- summary(fit) ---\n"); print(summary(fit))
  cat("--- param (full precision) ---\n"); print(fit$param, digits = 12)
  if (!is.null(fit$std.err)) { cat("--- std.err ---\n"); print(fit$std.err, digits = 12) }
  if (fit$model$P > 1) { cat("--- coef(fit) ---\n"); print(coef(fit), digits = 12) }
}
tojs <- function(fit, extra = list()) {
  g <- fit$gof
  c(list(call = paste(deparse(fit$call), collapse = " "),
         loglik = g$loglik, npar = fit$model$npar, df = g$df, Gsq = g$Gsq, AIC = g$AIC, BIC = g$BIC,
         entropy = g$entropy, N = fit$model$N, Ng = fit$model$Ng, groups = fit$var.names$g.names,
         loglik0_saturated = fit$datalist$loglik0,
         converged = fit$convergence$converged, niter = fit$convergence$niter,
         param = fit$param, std.err = fit$std.err), extra)
}

res <- list()
res$rows_total <- nrow(gss08)
res$rows_dropped_all_items_missing <- sum(rowSums(is.na(gss08[, items])) == 6)

## (a) full measurement invariance
A <- best_of(f0, 10, n.init = 50, measure.inv = TRUE)
cat("\n(a) lliks over 10 runs x n.init=50:\n"); print(A$lliks, digits = 12)
pr(A$fit, "(a) MGLCA, group DEGREE, K=3, measure.inv=TRUE")
res$a_measure_inv <- tojs(A$fit, list(run_lliks = A$lliks, best_seed = A$best_seed))

## (b) no measurement invariance: many restarts
B <- best_of(f0, 40, n.init = 100, testiter = 100, measure.inv = FALSE)
cat("\n(b) lliks over 40 runs x n.init=100 (testiter=100), sorted:\n"); print(sort(B$lliks, decreasing = TRUE), digits = 12)
pr(B$fit, "(b) MGLCA, group DEGREE, K=3, measure.inv=FALSE (best)")
res$b_no_measure_inv <- tojs(B$fit, list(run_lliks = B$lliks, best_seed = B$best_seed,
   n_runs_within_1e_6_of_best = sum(abs(B$lliks - max(B$lliks)) < 1e-6)))

## (c) full invariance + covariate SEX (coeff.inv = TRUE, the default)
C <- best_of(fS, 10, n.init = 50, measure.inv = TRUE)
cat("\n(c) lliks over 10 runs x n.init=50:\n"); print(C$lliks, digits = 12)
pr(C$fit, "(c) MGLCR, group DEGREE, K=3, ~ SEX, measure.inv=TRUE, coeff.inv=TRUE")
res$c_measure_inv_SEX <- tojs(C$fit, list(run_lliks = C$lliks, best_seed = C$best_seed, coef = coef(C$fit)))

## extra (c2): same with coeff.inv = FALSE (group-specific slopes); glca 1.4.2 may fail here
C2 <- tryCatch(best_of(fS, 10, n.init = 50, measure.inv = TRUE, coeff.inv = FALSE),
               error = function(e) { cat("\n(c2 extra) coeff.inv=FALSE with n.init>1 FAILED:", conditionMessage(e), "\n"); NULL })
if (is.null(C2)) C2 <- tryCatch(best_of(fS, 30, n.init = 1, measure.inv = TRUE, coeff.inv = FALSE),
               error = function(e) { cat("(c2 extra) with n.init=1 also FAILED:", conditionMessage(e), "\n"); NULL })
if (!is.null(C2)) {
  cat("\n(c2) lliks:\n"); print(C2$lliks, digits = 12)
  pr(C2$fit, "(c2 extra) MGLCR, group DEGREE, K=3, ~ SEX, measure.inv=TRUE, coeff.inv=FALSE")
  res$c2_measure_inv_SEX_coeffvar <- tojs(C2$fit, list(run_lliks = C2$lliks, best_seed = C2$best_seed, coef = coef(C2$fit)))
}

## local-maxima survey for (b): single random starts (n.init = 1), 200 seeds
llb1 <- sapply(1:200, function(s) tryCatch(glca(f0, group = DEGREE, data = gss08, nclass = 3, n.init = 1,
          measure.inv = FALSE, seed = s, maxiter = MAXIT, eps = EPS, std.err = FALSE, verbose = FALSE)$gof$loglik,
          error = function(e) NA))
cat("\n(b) local maxima from 200 single starts (n.init=1), loglik rounded to 1e-6 : count\n")
print(table(round(llb1, 6)))
res$b_single_start_survey <- list(lliks = llb1, table = as.list(table(round(llb1, 6))))

## invariance test
cat("\n######## gofglca(a, b, test = 'chisq') ########\n")
gt <- gofglca(A$fit, B$fit, test = "chisq")
print(gt)
print(gt$gtable, digits = 12); print(gt$dtable, digits = 12)
dev <- 2 * (B$fit$gof$loglik - A$fit$gof$loglik)
ddf <- B$fit$model$npar - A$fit$model$npar
cat(sprintf("deviance (unrounded) = %.12f  df = %d  p = %.12g\n", dev, as.integer(ddf), 1 - pchisq(dev, ddf)))
res$invariance_test <- list(deviance = dev, df = ddf, p_value = 1 - pchisq(dev, ddf),
                            gtable = gt$gtable, dtable = gt$dtable)

cat("\n######## gofglca(a, c) (all criteria) ########\n")
print(gofglca(A$fit, C$fit, criteria = c("AIC","BIC","entropy")))

## default-settings comparison (eps = 1e-6 default, n.init = 10 default), as a user would print
cat("\n######## Same models with glca defaults (eps=1e-6, n.init=10, seed=1) ########\n")
Ad <- glca(f0, group = DEGREE, data = gss08, nclass = 3, seed = 1, verbose = FALSE)
Bd <- glca(f0, group = DEGREE, data = gss08, nclass = 3, seed = 1, measure.inv = FALSE, verbose = FALSE)
Cd <- glca(fS, group = DEGREE, data = gss08, nclass = 3, seed = 1, verbose = FALSE)
print(gofglca(Ad, Bd, Cd, test = "chisq"))
res$defaults_seed1 <- lapply(list(a = Ad, b = Bd, c = Cd), function(f) f$gof)
sink()
writeLines(toJSON(res, digits = NA, auto_unbox = TRUE, pretty = TRUE, na = "null", force = TRUE),
           "/tmp/oracles/03_glca_gss08.json")
