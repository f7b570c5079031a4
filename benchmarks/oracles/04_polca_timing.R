source("/tmp/oracles/common.R")
sink("/tmp/oracles/04_polca_timing.out", split = TRUE)
data(election)
f2 <- cbind(MORALG,CARESG,KNOWG,LEADG,DISHONG,INTELG,MORALB,CARESB,KNOWB,LEADB,DISHONB,INTELB) ~ PARTY
cat("poLCA", as.character(packageVersion("poLCA")), R.version.string, "\n")
cat("machine: nproc =", parallel::detectCores(), "; BLAS:", extSoftVersion()[["BLAS"]], "; La_library:", La_library(), "\n")
cat(system("grep -m1 'model name' /proc/cpuinfo", intern = TRUE), "\n")
times <- numeric(3); lls <- numeric(3)
for (i in 1:3) {
  set.seed(100 + i)
  st <- system.time(fit <- poLCA(f2, election, nclass = 3, maxiter = 5000, tol = 1e-10,
                                 na.rm = FALSE, nrep = 20, verbose = FALSE, calc.se = TRUE))
  print(st)
  times[i] <- st[["elapsed"]]; lls[i] <- fit$llik
  cat(sprintf("rep %d: elapsed = %.3f s, best llik = %.10f, total EM iterations of best = %d\n",
              i, st[["elapsed"]], fit$llik, fit$numiter))
}
cat("elapsed seconds (3 repeats of nrep=20):", times, " median:", median(times), "\n")
sink()
writeLines(toJSON(list(what = "poLCA election K=3 ~PARTY na.rm=FALSE nrep=20 maxiter=5000 tol=1e-10, verbose=FALSE",
                       elapsed_s = times, median_s = median(times), best_llik = lls,
                       nproc = parallel::detectCores(), BLAS = extSoftVersion()[["BLAS"]]),
                  digits = NA, auto_unbox = TRUE, pretty = TRUE), "/tmp/oracles/04_polca_timing.json")
