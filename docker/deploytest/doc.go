// Package deploytest checks the deployment files under docker/.
package deploytest
