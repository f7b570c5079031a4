.libPaths(c("/tmp/oracles/Rlib", .libPaths()))
suppressMessages({library(poLCA); library(jsonlite)})
options(digits = 12)

# Re-fit the best model starting from its own (reordered) estimates so the
# class order is canonical: classes sorted by decreasing share P.
canonical <- function(fit, formula, data, nclass, na.rm, maxiter, tol) {
  ord <- order(fit$P, decreasing = TRUE)
  ps <- poLCA.reorder(fit$probs, ord)
  ref <- poLCA(formula, data, nclass = nclass, maxiter = maxiter, tol = tol,
               na.rm = na.rm, probs.start = ps, nrep = 1, verbose = TRUE)
  ref
}

fit_summary <- function(fit, label, extra = list()) {
  m <- list(
    label = label,
    call = paste(deparse(fit$call), collapse = " "),
    llik = fit$llik, npar = fit$npar, resid.df = fit$resid.df,
    aic = fit$aic, bic = fit$bic, Gsq = fit$Gsq, Chisq = fit$Chisq,
    N = fit$N, Nobs = fit$Nobs, numiter = fit$numiter, eflag = fit$eflag,
    P = fit$P, P.se = fit$P.se,
    probs = lapply(fit$probs, function(p) unclass(p)),
    probs.se = lapply(fit$probs.se, function(p) unclass(p)),
    probs_colnames = lapply(fit$probs, colnames),
    coeff = if (is.matrix(fit$coeff)) fit$coeff else NA,
    coeff_rownames = if (is.matrix(fit$coeff)) rownames(fit$coeff) else NA,
    coeff.se = if (is.matrix(fit$coeff.se)) fit$coeff.se else NA,
    coeff.V = if (is.matrix(fit$coeff.V)) fit$coeff.V else NA
  )
  c(m, extra)
}

print_fit <- function(fit, label) {
  cat("\n################ ", label, " ################\n")
  cat(sprintf("llik      = %.12f\n", fit$llik))
  cat(sprintf("npar      = %d\n", as.integer(fit$npar)))
  cat(sprintf("resid.df  = %d\n", as.integer(fit$resid.df)))
  cat(sprintf("AIC       = %.12f\n", fit$aic))
  cat(sprintf("BIC       = %.12f\n", fit$bic))
  cat(sprintf("Gsq       = %.12f\n", fit$Gsq))
  cat(sprintf("Chisq     = %.12f\n", fit$Chisq))
  cat(sprintf("N (rows used) = %d ; Nobs (fully observed rows) = %d\n", fit$N, fit$Nobs))
  cat(sprintf("numiter   = %d ; eflag = %s\n", fit$numiter, fit$eflag))
  cat("P (class shares):", sprintf("%.12f", fit$P), "\n")
  cat("P.se:", sprintf("%.12f", fit$P.se), "\n")
  cat("probs (rows = classes, cols = categories):\n"); print(fit$probs, digits = 12)
  cat("probs.se:\n"); print(fit$probs.se, digits = 12)
  if (is.matrix(fit$coeff)) {
    cat("coeff (rows = covariates, cols = log-odds class r vs class 1, r = 2..R):\n"); print(fit$coeff, digits = 12)
    cat("coeff.se:\n"); print(fit$coeff.se, digits = 12)
    cat("coeff.V:\n"); print(fit$coeff.V, digits = 12)
  }
}

attempts_summary <- function(fit) {
  a <- fit$attempts
  best <- max(a)
  list(attempts = a, best = best,
       n_within_1e_6_of_best = sum(abs(a - best) < 1e-6),
       n_within_1e_3_of_best = sum(abs(a - best) < 1e-3))
}
